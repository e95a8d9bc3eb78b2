"""Transport and protocol faults as `UnusableResponse` values, with messages that say what happened.

Every message and excerpt passes through a `Redactor`, so a server that echoes a credential into
an error page cannot leak it into records; excerpts are cleaned before they are capped.
"""

from __future__ import annotations

import orjson
from pydantic import JsonValue

from assay.backend.redaction import Redactor
from assay.core.diagnostics import DiagnosticCode, Evidence, UnusableResponse

_SERVER_MESSAGE_LIMIT = 500

_DEADLINE_NAMES = {
    DiagnosticCode.timeout_connect: "connect",
    DiagnosticCode.timeout_first_token: "first-token",
    DiagnosticCode.timeout_idle: "idle",
    DiagnosticCode.timeout_total: "total",
}


def server_error_message(body: bytes) -> str | None:
    """The human message inside a JSON error body, in any of the shapes servers use.

    >>> server_error_message(b'{"error": {"message": "The model `nope` does not exist."}}')
    'The model `nope` does not exist.'
    >>> server_error_message(b'{"detail": "Not Found"}')
    'Not Found'
    >>> server_error_message(b"<html>busy</html>") is None
    True
    """
    try:
        parsed: JsonValue = orjson.loads(body)
    except orjson.JSONDecodeError:
        return None
    if not isinstance(parsed, dict):
        return None
    error = parsed.get("error")
    candidates = (
        error.get("message") if isinstance(error, dict) else error,
        parsed.get("message"),
        parsed.get("detail"),
    )
    for candidate in candidates:
        if isinstance(candidate, str) and candidate.strip():
            return candidate.strip()[:_SERVER_MESSAGE_LIMIT]
    return None


def http_status_fault(
    status: int, reason: str | None, path: str, body: bytes, redactor: Redactor
) -> UnusableResponse:
    """A non-2xx answer, with the server's own error message when it sent one as JSON."""
    # Cleaned before the server's message is cut to its limit: no head of a secret survives.
    body = redactor.clean_bytes(body)
    server_message = server_error_message(body)
    head = f"HTTP {status} {reason or ''}".rstrip() + f" from {path}"
    if server_message is not None:
        message = f"{head}: {server_message}"
    elif body.strip():
        message = f"{head} with a non-JSON body ({len(body)} bytes read)"
    else:
        message = f"{head} with an empty body"
    return UnusableResponse(
        code=DiagnosticCode.http_status,
        message=redactor.clean(message),
        evidence=Evidence(http_status=status, excerpt=redactor.excerpt(body)),
    )


def bad_content_type_fault(
    status: int, content_type: str | None, body: bytes, redactor: Redactor
) -> UnusableResponse:
    """A 2xx answer that is neither JSON nor SSE, such as a proxy's HTML page."""
    shown = content_type if content_type else "no content type"
    return UnusableResponse(
        code=DiagnosticCode.bad_content_type,
        message=redactor.clean(
            f"HTTP {status} answer is neither JSON nor an event stream ({shown}, "
            f"{len(body)} bytes read)"
        ),
        evidence=Evidence(http_status=status, excerpt=redactor.excerpt(body)),
    )


def connect_fault(
    message: str, redactor: Redactor, code: DiagnosticCode = DiagnosticCode.connect_error
) -> UnusableResponse:
    """No response arrived: refused, reset, or the connect deadline passed."""
    return UnusableResponse(code=code, message=redactor.clean(message))


# The faults below come with the evidence of how far the answer had got (`Backend._evidence`:
# its status, a cleaned excerpt of what was read, the partial answer).


def deadline_fault(
    code: DiagnosticCode, limit_s: float, body_bytes: int, evidence: Evidence
) -> UnusableResponse:
    """A deadline passed; says which, its limit, and how far the answer had got."""
    if evidence.http_status is None:
        progress = "before any response"
    elif evidence.partial is not None:
        progress = f"after {evidence.partial.streamed_tokens} streamed tokens"
    else:
        progress = f"after {body_bytes} body bytes"
    return UnusableResponse(
        code=code,
        message=f"the {_DEADLINE_NAMES[code]} deadline of {limit_s:g} s passed {progress}",
        evidence=evidence,
    )


def interrupted_fault(detail: str, evidence: Evidence, redactor: Redactor) -> UnusableResponse:
    """The connection dropped while the body was being read; `detail` says how, in words."""
    partial = evidence.partial
    tokens = "" if partial is None else f" after {partial.streamed_tokens} streamed tokens"
    return UnusableResponse(
        code=DiagnosticCode.stream_interrupted,
        message=redactor.clean(
            f"the connection dropped in the middle of the body{tokens}: {detail}"
        ),
        evidence=evidence,
    )


def malformed_fault(
    code: DiagnosticCode, detail: str, evidence: Evidence, redactor: Redactor
) -> UnusableResponse:
    """The HTTP response itself could not be read: broken framing or an undecodable encoding."""
    return UnusableResponse(code=code, message=redactor.clean(detail), evidence=evidence)


def too_large_fault(limit: int, what: str, evidence: Evidence) -> UnusableResponse:
    """The response passed `--max-response-bytes`; reading stopped there."""
    return UnusableResponse(
        code=DiagnosticCode.response_too_large,
        message=f"{what} passed the limit of {limit} bytes (--max-response-bytes); reading stopped",
        evidence=evidence,
    )
