"""The one way a content validator says no: a `Failure` carrying the response as evidence."""

from __future__ import annotations

from returns.result import Failure, Result

from assay.core.diagnostics import CustomCode, DiagnosticCode, Evidence, UnusableResponse
from assay.core.response import GenerationResponse


def reject(
    response: GenerationResponse,
    code: DiagnosticCode | CustomCode,
    message: str,
    excerpt: str | None = None,
) -> Result[GenerationResponse, UnusableResponse]:
    """A validator's failure whose evidence is the response itself (with any usage it had) and
    the HTTP status it came with; `code` may be a built-in code or a library user's `CustomCode`.

    >>> from assay.core import Endpoint, ResponseTiming
    >>> r = GenerationResponse(request_id="r1", endpoint=Endpoint.chat, streamed=False,
    ...                        timing=ResponseTiming(send_ns=0, end_ns=1))
    >>> reject(r, DiagnosticCode.empty_response, "nothing").failure().evidence.partial is r
    True
    """
    evidence = Evidence(http_status=response.http_status, partial=response, excerpt=excerpt)
    return Failure(UnusableResponse(code=code, message=message, evidence=evidence))
