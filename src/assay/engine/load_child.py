"""One load-generating process: `python -m assay.engine.load_child FD`.

FD is this process's end of a socket pair with the parent (see `assay.engine.coordinator`);
the process's body is `assay.engine.load_process`. The garbage collector is off while the body
imports the run path (~100,000 objects that live as long as the process: collections walking
them as they are built free nothing, 25-60 ms of the process's start) and on again before the
load.
"""

from __future__ import annotations

import gc
import os
import sys


def main(fd: int) -> None:
    """Import the body with the collector off and run it on the socket `fd`."""
    gc.disable()
    from multiprocessing.connection import Connection

    from assay.engine.load_process import child_main

    child_main(Connection(fd))


if __name__ == "__main__":
    main(int(sys.argv[1]))
    # Every sink is closed and every result sent: the interpreter's teardown (freeing each
    # module's objects) would only add 0.1-0.2 s that the parent waits for before its report.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
