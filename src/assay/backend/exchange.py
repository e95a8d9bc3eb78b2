"""One exchange with the server: the request id it is sent under, and how far it got."""

from __future__ import annotations

import hashlib
import uuid
from dataclasses import dataclass, field

from assay.core.response import ExchangeIds, GenerationResponse
from assay.core.trusted import trusted
from assay.handlers.base import StreamAccumulator, Transfer

# The namespace of the UUIDs sent as request ids (see `wire_request_id`); fixed forever, so the
# same run sends the same ids.
_REQUEST_ID_NAMESPACE = uuid.UUID("5f0c8a52-4d1e-4b7a-9a57-2c3e6b1d8f40")
_NAMESPACE_BYTES = _REQUEST_ID_NAMESPACE.bytes


def wire_request_id(request_id: str) -> str:
    """The UUID sent in the request-id header for assay's `request_id` (a name-based UUID 5).

    Servers such as llama-cpp-python's reject ids that are not UUIDs; a name-based UUID keeps
    runs reproducible and lets a server log line be matched to its record.

    >>> wire_request_id("req-00000042")
    'f84aacf4-cebb-5a8b-949f-c956265a7d0f'
    >>> wire_request_id("req-00000042") == str(uuid.uuid5(_REQUEST_ID_NAMESPACE, "req-00000042"))
    True
    """
    # RFC 4122's name-based UUID 5 spelled out (`uuid.uuid5` builds two UUID objects and costs
    # about three times as much; this runs once per request): the SHA-1 of the namespace and the
    # name, from a copy of the namespace's hash; in its first 32 hex digits the 13th is the
    # version (5) and the 17th carries the variant in its top two bits (binary 10).
    sha1 = _NAMESPACE_SHA1.copy()
    sha1.update(request_id.encode())
    text = sha1.hexdigest()
    return (
        f"{text[:8]}-{text[8:12]}-5{text[13:16]}-{_VARIANT_DIGIT[text[16]]}{text[17:20]}-"
        f"{text[20:32]}"
    )


_NAMESPACE_SHA1 = hashlib.sha1(_NAMESPACE_BYTES)
# A hex digit with its top two bits set to the variant's 10.
_VARIANT_DIGIT = {digit: "89ab"[int(digit, 16) & 3] for digit in "0123456789abcdef"}


@dataclass(slots=True)
class Exchange:
    """How far one request got, kept outside the deadline scope for the evidence of a fault."""

    send_ns: int = 0
    # The ids of the exchange (see `ExchangeIds`): what was sent, then what the server echoed.
    sent_header: str | None = None
    sent: str | None = None
    traceparent: str | None = None
    echoed: str | None = None
    first_byte_ns: int | None = None
    http_status: int | None = None
    reason: str | None = None
    accumulator: StreamAccumulator | None = None
    terminal_ns: int | None = None
    received: list[bytes] = field(default_factory=list)

    def transfer(self, end_ns: int) -> Transfer:
        return Transfer(
            send_ns=self.send_ns,
            end_ns=end_ns,
            first_byte_ns=self.first_byte_ns,
            http_status=self.http_status or 0,
            ids=self.ids(),
        )

    def ids(self) -> ExchangeIds | None:
        """The ids sent and echoed so far; None when nothing was sent and nothing came back."""
        if self.sent is None and self.traceparent is None and self.echoed is None:
            return None
        # Strings assay made, or the echo it capped and cleaned: built without validation.
        ids: ExchangeIds = trusted(
            ExchangeIds,
            {
                "sent_header": self.sent_header,
                "sent": self.sent,
                "echoed": self.echoed,
                "answer": None,
                "traceparent": self.traceparent,
            },
        )
        return ids

    def partial(self, end_ns: int) -> GenerationResponse | None:
        accumulator = self.accumulator
        return None if accumulator is None else accumulator.partial(self.transfer(end_ns))

    def received_bytes(self) -> bytes | None:
        return b"".join(self.received) if self.received else None
