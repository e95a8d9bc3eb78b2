"""The HTTP backend: one pool of connections per process, every fault a `Failure` value.

>>> from pydantic import SecretStr
>>> settings = BackendSettings(base_url="http://127.0.0.1:8000", api_key=SecretStr("sk-1"))
>>> settings.timeouts.first_token_s
60.0
"""

from assay.backend.client import Backend, open_backend
from assay.backend.exchange import wire_request_id
from assay.backend.readiness import check_ready, wait_until_ready
from assay.backend.redaction import Redactor
from assay.backend.settings import BackendSettings, split_endpoint_path
from assay.spec.target import Timeouts

__all__ = [
    "Backend",
    "BackendSettings",
    "Redactor",
    "Timeouts",
    "check_ready",
    "open_backend",
    "split_endpoint_path",
    "wait_until_ready",
    "wire_request_id",
]
