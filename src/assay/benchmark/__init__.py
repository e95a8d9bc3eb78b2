"""Running a benchmark from a `RunConfig`: target, plan, sinks, report."""
