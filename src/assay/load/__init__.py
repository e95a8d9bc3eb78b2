"""How one slice of one step offers its load: the schedule, replayed traces, sessions, the
step runner and its progress, and the benchmark plan the engine hands to every slice.

What the load is (the profiles and constraints) is `assay.spec`; running slices in processes
or Ray actors is `assay.engine`, above this package.
"""

__all__: list[str] = []
