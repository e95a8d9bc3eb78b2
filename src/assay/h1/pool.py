"""Kept-alive connections to one server, at most `limit` open at once.

A connection goes back to the pool only when its last response was read to its end on a
connection the server keeps alive; one the server closed while idle is dropped when next taken.
Opening a new connection is bounded by the connect deadline; waiting for a free one is not
(that wait is the run's own concurrency, not the server's).
"""

from __future__ import annotations

import asyncio
import functools
import os
import socket
import ssl
from collections import deque
from collections.abc import Callable

from assay.h1.connection import H1Connection


class ConnectFailure(Exception):
    """No connection: `timed_out` when the connect deadline passed, else `reason` in words."""

    def __init__(self, reason: str, *, timed_out: bool = False, tls: bool = False) -> None:
        super().__init__(reason)
        self.reason = reason
        self.timed_out = timed_out
        self.tls = tls


class H1Pool:
    """The pool of one target (`host`, `port`, TLS or not); its connections keep the response
    headers named in `headers` (lower case)."""

    __slots__ = (
        "_connect_s",
        "_headers",
        "_host",
        "_idle",
        "_limit",
        "_now_ns",
        "_open",
        "_port",
        "_ssl",
        "_waiters",
    )

    def __init__(
        self,
        host: str,
        port: int,
        tls: ssl.SSLContext | None,
        *,
        limit: int,
        connect_s: float,
        now_ns: Callable[[], int],
        headers: frozenset[bytes],
    ) -> None:
        self._host = host
        self._port = port
        self._ssl = tls
        self._limit = limit
        self._connect_s = connect_s
        self._now_ns = now_ns
        self._headers = headers
        self._idle: list[H1Connection] = []
        self._open = 0
        self._waiters: deque[asyncio.Future[None]] = deque()

    def take(self) -> H1Connection | None:
        """A pooled connection that is still open, or None (then `acquire` one)."""
        idle = self._idle
        while idle:
            connection = idle.pop()
            if not connection.closed:
                return connection
            self._open -= 1
        return None

    async def acquire(self) -> H1Connection:
        """A pooled connection that is still open, else a new one (raises `ConnectFailure`)."""
        connection = self.take()
        if connection is not None:
            return connection
        while self._open >= self._limit:
            waiter = asyncio.get_running_loop().create_future()
            self._waiters.append(waiter)
            try:
                await waiter
            except BaseException:
                if waiter.done() and not waiter.cancelled():
                    self._wake_one()  # woken, then cancelled: the turn passes to the next
                else:
                    waiter.cancel()
                raise
            connection = self.take()
            if connection is not None:
                return connection
        self._open += 1
        try:
            return await self._connect()
        except BaseException:
            self._open -= 1
            self._wake_one()
            raise

    def release(self, connection: H1Connection) -> None:
        """Take `connection` back after a request: kept when reusable, else closed."""
        connection.done()
        if connection.reusable:
            self._idle.append(connection)
        else:
            connection.close()
            self._open -= 1
        self._wake_one()

    def close(self) -> None:
        for connection in self._idle:
            connection.close()
        self._idle.clear()

    def _wake_one(self) -> None:
        waiters = self._waiters
        while waiters:
            waiter = waiters.popleft()
            if not waiter.done():
                waiter.set_result(None)
                return

    async def _connect(self) -> H1Connection:
        headers = self._headers
        return await open_connection(
            self._host,
            self._port,
            self._ssl,
            self._connect_s,
            lambda: H1Connection(self._now_ns, headers),
        )


async def open_connection(
    host: str,
    port: int,
    tls: ssl.SSLContext | None,
    connect_s: float,
    protocol: Callable[[], H1Connection],
) -> H1Connection:
    """A new connection made by `protocol`, opened within `connect_s` (raises `ConnectFailure`)."""
    loop = asyncio.get_running_loop()
    try:
        async with asyncio.timeout(connect_s):
            _, connection = await loop.create_connection(
                protocol, host, port, ssl=tls, server_hostname=host if tls is not None else None
            )
    except TimeoutError:
        raise ConnectFailure("connect deadline", timed_out=True) from None
    except ssl.SSLCertVerificationError as error:
        reason = error.verify_message or str(error)
        raise ConnectFailure(f"certificate verify failed: {reason}", tls=True) from None
    except ssl.SSLError as error:
        raise ConnectFailure(f"the TLS handshake failed: {error.reason or error}") from None
    except OSError as error:
        raise ConnectFailure(connect_words(error, host)) from None
    sock = connection.transport.get_extra_info("socket") if connection.transport else None
    if sock is not None and sock.family in (socket.AF_INET, socket.AF_INET6):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return connection


def connect_words(error: OSError, host: str) -> str:
    """ "connection refused" rather than "Connect call failed ('127.0.0.1', 9)"; a host name
    that did not resolve says so.

    >>> connect_words(ConnectionRefusedError(111, "Connection refused"), "127.0.0.1")
    'connection refused'
    """
    if isinstance(error, socket.gaierror):
        return f"host name {host!r} did not resolve: {error.strerror or error}"
    if error.errno:
        return os.strerror(error.errno).lower()
    return str(error) or type(error).__name__


def tls_context(setting: ssl.SSLContext | bool) -> ssl.SSLContext:
    """The context of a TLS setting: the system's CAs (True), no verification (False), or the
    context given."""
    if setting is True:
        return _system_context()
    if setting is False:
        # Nothing to verify with, so no CA is loaded (loading the system's takes ~50 ms).
        context = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
        context.check_hostname = False
        context.verify_mode = ssl.CERT_NONE
        return context
    return setting


@functools.cache
def _system_context() -> ssl.SSLContext:
    """The system's CAs, loaded once per process (and only for an https:// URL)."""
    return ssl.create_default_context()
