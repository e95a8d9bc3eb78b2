"""An OpenAI-compatible mock server with a latency model and fault injection.

It speaks the wire format on its own (it never imports the client's handlers), so the client is
tested against bytes it did not write. Each fault in `FAULTS` names the diagnostic code a client
must report for it.
"""

from assay.mock.config import Fixed, LatencyModel, MockConfig, Normal, Uniform, sample
from assay.mock.faults import (
    FAULT_HEADER,
    FAULTS,
    REQUEST_ID_HEADER,
    FaultInfo,
    FaultSpec,
    choose_fault,
    parse_fault_header,
)
from assay.mock.launcher import serve, start_mock_processes
from assay.mock.server import MockServer, open_mock_server

__all__ = [
    "FAULTS",
    "FAULT_HEADER",
    "REQUEST_ID_HEADER",
    "FaultInfo",
    "FaultSpec",
    "Fixed",
    "LatencyModel",
    "MockConfig",
    "MockServer",
    "Normal",
    "Uniform",
    "choose_fault",
    "open_mock_server",
    "parse_fault_header",
    "sample",
    "serve",
    "start_mock_processes",
]
