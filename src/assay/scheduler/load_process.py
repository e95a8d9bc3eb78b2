"""One load-generating process: `python -m assay.scheduler.load_process FD`.

FD is this process's end of a socket pair with the parent (see `assay.scheduler.processes`). A
fresh interpreter started here imports only the run path, not the parent's `__main__` script,
and starts no helper process; it inherits SIGINT ignored from the parent.
"""

from __future__ import annotations

import os
import sys
from multiprocessing.connection import Connection

from assay.scheduler.processes import child_main

if __name__ == "__main__":
    child_main(Connection(int(sys.argv[1])))
    # Every sink is closed and every result sent: the interpreter's teardown (freeing each
    # module's objects) would only add 0.1-0.2 s that the parent waits for before its report.
    sys.stdout.flush()
    sys.stderr.flush()
    os._exit(0)
