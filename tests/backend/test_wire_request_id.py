"""The request-id header is RFC 4122's UUID 5 of assay's request id, computed without `uuid`."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from assay.backend import wire_request_id
from assay.backend.exchange import _REQUEST_ID_NAMESPACE


@given(st.text())
def test_wire_request_id_is_the_standard_uuid5_of_the_request_id(request_id: str) -> None:
    # Lone surrogates cannot be encoded; request ids are printable text.
    request_id = request_id.encode("utf-8", "replace").decode("utf-8")
    assert wire_request_id(request_id) == str(uuid.uuid5(_REQUEST_ID_NAMESPACE, request_id))


def test_wire_request_id_parses_as_a_version_5_uuid() -> None:
    parsed = uuid.UUID(wire_request_id("req-00000001"))
    assert parsed.version == 5
    assert parsed.variant == uuid.RFC_4122
