"""Waiting until a monotonic nanosecond on a Linux timerfd, for pacing finer than the loop's timer.

uvloop keeps its timers in whole milliseconds, so `asyncio.sleep` wakes anywhere up to a
millisecond late. A timerfd armed at an absolute `CLOCK_MONOTONIC` time (the clock behind
`time.perf_counter_ns` on Linux) becomes readable when the kernel's high-resolution timer fires,
and the loop's `epoll` returns at once: no thread, no spinning. Python 3.11 has no
`os.timerfd_*` (3.13 does), so libc's functions are called through ctypes, on every version.
"""

from __future__ import annotations

import asyncio
import ctypes
import functools
import os
import sys
import time
from collections.abc import Callable
from typing import Protocol

_TFD_TIMER_ABSTIME = 1


class TimerFd(Protocol):
    """One kernel timer readable as a file descriptor, armed at absolute monotonic times."""

    fd: int

    def arm(self, deadline_ns: int) -> None: ...

    def close(self) -> None: ...


class _Timespec(ctypes.Structure):
    _fields_ = (("tv_sec", ctypes.c_long), ("tv_nsec", ctypes.c_long))


class _Itimerspec(ctypes.Structure):
    _fields_ = (("it_interval", _Timespec), ("it_value", _Timespec))


class _LibcTimerFd:
    """A timerfd made and armed through libc."""

    def __init__(self, libc: ctypes.CDLL) -> None:
        self._settime = libc.timerfd_settime
        self._value = _Itimerspec()
        fd: int = libc.timerfd_create(time.CLOCK_MONOTONIC, os.O_NONBLOCK | os.O_CLOEXEC)
        if fd < 0:
            raise _os_error()
        self.fd = fd

    def arm(self, deadline_ns: int) -> None:
        self._value.it_value.tv_sec, self._value.it_value.tv_nsec = divmod(
            deadline_ns, 1_000_000_000
        )
        if self._settime(self.fd, _TFD_TIMER_ABSTIME, ctypes.byref(self._value), None) < 0:
            raise _os_error()

    def close(self) -> None:
        os.close(self.fd)


def _os_error() -> OSError:
    errno = ctypes.get_errno()
    return OSError(errno, os.strerror(errno))


@functools.cache
def _libc() -> ctypes.CDLL:
    libc = ctypes.CDLL(None, use_errno=True)
    libc.timerfd_create.argtypes = (ctypes.c_int, ctypes.c_int)
    libc.timerfd_create.restype = ctypes.c_int
    libc.timerfd_settime.argtypes = (
        ctypes.c_int,
        ctypes.c_int,
        ctypes.POINTER(_Itimerspec),
        ctypes.POINTER(_Itimerspec),
    )
    libc.timerfd_settime.restype = ctypes.c_int
    return libc


def open_timer_fd() -> TimerFd:
    """A new timerfd on `CLOCK_MONOTONIC`; OSError (or AttributeError) where there is none."""
    if not sys.platform.startswith("linux"):
        raise OSError("timerfd is Linux only")
    return _LibcTimerFd(_libc())


class TimerFdWaiter:
    """Waits on one timerfd, re-armed for each wait and watched by the running loop.

    The timerfd is opened at the first wait that needs it. Where none can be opened, or the loop
    cannot watch a file descriptor, this and every later wait use the loop's timer instead.
    `close` must be called when the waits are over: it closes the file descriptor.
    """

    def __init__(self, open_timer: Callable[[], TimerFd] = open_timer_fd) -> None:
        self._open_timer = open_timer
        self._timer: TimerFd | None = None
        # Whether waits use the loop's timer (no timerfd could be used).
        self.falls_back = False

    async def sleep_until(self, deadline_ns: int) -> None:
        if time.perf_counter_ns() >= deadline_ns:
            return
        if not self.falls_back and self._timer is None:
            self._timer = self._opened_timer()
        if self._timer is None:
            # The loop's own timer: to the millisecond under uvloop.
            delay_ns = deadline_ns - time.perf_counter_ns()
            if delay_ns > 0:
                await asyncio.sleep(delay_ns / 1e9)
            return
        await self._fired(self._timer, deadline_ns)

    def _opened_timer(self) -> TimerFd | None:
        try:
            timer = self._open_timer()
        except (OSError, AttributeError):
            self.falls_back = True
            return None
        if not _loop_watches_fds(timer):
            timer.close()
            self.falls_back = True
            return None
        return timer

    async def _fired(self, timer: TimerFd, deadline_ns: int) -> None:
        loop = asyncio.get_running_loop()
        fired: asyncio.Future[None] = loop.create_future()
        # Arming resets the expiry count, so a firing left over from a cancelled wait is gone
        # before the loop watches the descriptor again.
        timer.arm(deadline_ns)
        loop.add_reader(timer.fd, _take_expiry, timer.fd, fired)
        try:
            await fired
        finally:
            loop.remove_reader(timer.fd)

    def close(self) -> None:
        if self._timer is not None:
            self._timer.close()
            self._timer = None


def _loop_watches_fds(timer: TimerFd) -> bool:
    loop = asyncio.get_running_loop()
    try:
        loop.add_reader(timer.fd, _ignore)
    except NotImplementedError:  # e.g. the Proactor loop on Windows
        return False
    loop.remove_reader(timer.fd)
    return True


def _ignore() -> None:
    pass


def _take_expiry(fd: int, fired: asyncio.Future[None]) -> None:
    try:
        os.read(fd, 8)
    except BlockingIOError:  # woken with nothing to read: wait on
        return
    if not fired.done():
        fired.set_result(None)
