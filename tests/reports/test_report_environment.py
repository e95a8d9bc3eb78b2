"""The report's environment block: the platform named as `platform.platform()` names it, without
the `uname -p` process that costs every run ~8 ms."""

from __future__ import annotations

import platform
import sys

import pytest

from assay.reports import collect_environment
from assay.reports.report import platform_name

_started: list[str] = []
_watching = False


def _audit(event: str, args: tuple[object, ...]) -> None:
    if _watching and event == "subprocess.Popen":
        _started.append(str(args[1]))


sys.addaudithook(_audit)


def test_the_platform_is_named_as_the_platform_module_names_it() -> None:
    processor = platform.uname().processor
    if processor not in ("", "unknown", platform.machine()):
        pytest.skip(f"this system's `uname -p` names its CPU ({processor}), which is left out")
    assert platform_name() == platform.platform()


@pytest.mark.skipif(sys.platform != "linux", reason="elsewhere platform.platform() is asked")
def test_collecting_the_environment_starts_no_process(monkeypatch: pytest.MonkeyPatch) -> None:
    global _watching
    # platform's caches emptied, so a call that would start `uname -p` starts it here
    monkeypatch.setattr(platform, "_platform_cache", {})
    monkeypatch.setattr(platform, "_uname_cache", None)
    _started.clear()
    _watching = True
    try:
        environment = collect_environment(include_hostname=False)
    finally:
        _watching = False
    assert _started == []
    assert environment.platform.startswith(f"Linux-{platform.release()}-")
