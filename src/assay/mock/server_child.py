"""One mock server child: `python -m assay.mock.server_child HOST PORT CONFIG_JSON COUNTERS SLOT N`.

COUNTERS is the file whose slot SLOT (of N) holds this worker's `/metrics` counters.

It binds with SO_REUSEPORT (its siblings share the port), prints `ready URL` on stdout once it
listens, and serves until SIGTERM or SIGINT, or until its stdin reaches end of file (the parent
holds the other end: a parent that dies, however, takes its workers with it). A fresh
interpreter, not a multiprocessing child, so the parent's `__main__` is never re-imported.
"""

from __future__ import annotations

import os
import signal
import sys
import threading
from pathlib import Path

from assay.mock.config import MockConfig
from assay.mock.metrics import ServedCounters
from assay.mock.server import READY_PREFIX, run_loop, serve_until_signal


def _announce(url: str) -> None:
    print(READY_PREFIX + url, flush=True)


def _stop_when_parent_leaves() -> None:
    sys.stdin.read()  # returns at end of file: the parent closed the pipe or died
    os.kill(os.getpid(), signal.SIGTERM)


def main(argv: list[str]) -> None:
    host, port, config_json, counters_file, slot, workers = argv
    threading.Thread(target=_stop_when_parent_leaves, name="parent-watch", daemon=True).start()
    config = MockConfig.model_validate_json(config_json)
    models = len(config.served_names)
    counters = ServedCounters(Path(counters_file), int(slot), int(workers), models)
    run_loop(serve_until_signal(config, host, int(port), True, _announce, counters))


if __name__ == "__main__":
    main(sys.argv[1:])
