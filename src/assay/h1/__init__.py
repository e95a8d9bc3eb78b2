"""assay's own HTTP/1.1 client transport: kept-alive connections read with llhttp (httptools).

`PreparedRequests` writes each request as bytes, `H1Pool` holds the connections of one server,
`H1Connection` reads an answer into a `ResponseReader` as it arrives and fails with a
`WireFault` (or the pool with a `ConnectFailure`) when the network or the framing does;
`refuse_proxy` stops a run the environment would send through an HTTP proxy.
"""

from assay.h1.connection import FaultKind, H1Connection, ResponseReader, WireFault
from assay.h1.pool import ConnectFailure, H1Pool
from assay.h1.proxy import proxy_for, refuse_proxy
from assay.h1.request import PreparedRequests

__all__ = [
    "ConnectFailure",
    "FaultKind",
    "H1Connection",
    "H1Pool",
    "PreparedRequests",
    "ResponseReader",
    "WireFault",
    "proxy_for",
    "refuse_proxy",
]
