"""The `assay` console entry point: SIGTERM is a Ctrl-C from its first instruction.

A run stopped by `timeout`, systemd, Kubernetes or CI gets SIGTERM, possibly while Python is
still importing the command line (a good part of a second). So the first thing `main` does,
before it imports anything else of assay, is make SIGTERM raise `KeyboardInterrupt` as SIGINT
does; from then on both end the command the same way: whatever was started is stopped by the
code that started it, the folder a run claimed is removed if it is still empty, exit code 130.
Once a run is under way `assay.engine.interrupt` turns both into a flag the run polls.

This module imports nothing at its top, so the handler is in place a few milliseconds after
the interpreter starts; the commands are in `assay.cli.commands`.
"""

_INTERRUPTED = 130
"""`assay.cli.exit_codes.EXIT_INTERRUPTED`, known here before anything is imported."""


def main() -> None:
    """The `assay` command; every way it is stopped (Ctrl-C, SIGTERM, before or during a
    command) ends with one "interrupted" line and exit code 130: the run's own, saying what
    it kept, once a run is under way, else a bare one on stderr."""
    import signal

    signal.signal(signal.SIGTERM, signal.default_int_handler)
    import atexit
    import gc
    import sys

    # Start-up builds a few hundred thousand objects that live as long as the command (pydantic's
    # schemas, typer's commands); the collector would walk them all several times while they are
    # built and free nothing (~45 ms of a 10-request run). `assay.load.collector.collector_on` turns
    # it back on, with those objects in the oldest generation, before a command's work, and
    # `assay run` once its imports are done, before the load; a caller of `main` in its own
    # process (a test) gets it back on however the command ends.
    gc.disable()
    # The interpreter's exit ends with two full collections that would walk every object still
    # alive (~80 ms after a run, to free nothing worth it); frozen at exit, they are skipped.
    # Registered for the exit, not done as the command ends, so a process that calls `main`
    # (a test) keeps its collector as it was until it exits itself.
    atexit.unregister(gc.freeze)
    atexit.register(gc.freeze)

    try:
        # Both stop signals raise and are remembered: a `KeyboardInterrupt` raised where Python
        # cannot propagate it (inside code a C extension calls) is lost, and the run then starts
        # with its stop flag set instead of running to its end.
        from assay.engine.interrupt import STOP_SIGNALS, STOPPED_EARLY, stop_raising

        STOPPED_EARLY.raised = False  # a process may call `main` more than once (a test does)
        for number in STOP_SIGNALS:
            signal.signal(number, stop_raising)
        from assay.cli.commands import run_app

        code = run_app()
    except KeyboardInterrupt:
        code = _INTERRUPTED  # stopped before a command's own guard was in place
    except Exception as error:
        from assay.cli.guard import interrupted

        if not interrupted(error):  # e.g. pydantic's SchemaError wrapping the interrupt
            raise
        code = _INTERRUPTED
    finally:
        gc.enable()
        interrupt = sys.modules.get("assay.engine.interrupt")
        if interrupt is not None:  # what a process runs after `main` starts unstopped
            interrupt.STOPPED_EARLY.raised = False
    if code == _INTERRUPTED:
        from assay.cli.console import interruption_said

        if not interruption_said():  # a run says it once, with what it kept
            sys.stderr.write("interrupted\n")
    sys.exit(code)


__all__ = ["main"]
