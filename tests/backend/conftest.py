"""Every backend test runs on asyncio's loop and on uvloop (the loop assay runs on by default):
the transport's Protocol must behave the same on both."""

from __future__ import annotations

import asyncio
import sys
from collections.abc import Callable, Mapping

import pytest


def pytest_asyncio_loop_factories(
    config: pytest.Config, item: pytest.Item
) -> Mapping[str, Callable[[], asyncio.AbstractEventLoop]]:
    factories: dict[str, Callable[[], asyncio.AbstractEventLoop]] = {
        "asyncio": asyncio.new_event_loop
    }
    if sys.platform != "win32":
        import uvloop

        factories["uvloop"] = uvloop.new_event_loop
    return factories
