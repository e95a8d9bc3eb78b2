"""The request id sent on the wire is the RFC 4122 name-based UUID 5 of assay's request id."""

from __future__ import annotations

import uuid

from hypothesis import given
from hypothesis import strategies as st

from assay.backend import wire_request_id
from assay.backend.exchange import _REQUEST_ID_NAMESPACE


@given(st.text(alphabet=st.characters(exclude_categories=["Cs"])))
def test_wire_request_id_is_the_uuid5_of_the_request_id(request_id: str) -> None:
    assert wire_request_id(request_id) == str(uuid.uuid5(_REQUEST_ID_NAMESPACE, request_id))


def test_wire_request_ids_of_a_run_are_their_uuid5s() -> None:
    # Every version and variant digit shows up among a few thousand ids.
    for index in range(4096):
        name = f"req-{index:08d}"
        assert wire_request_id(name) == str(uuid.uuid5(_REQUEST_ID_NAMESPACE, name))
