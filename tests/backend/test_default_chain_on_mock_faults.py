"""The mock's `missing_finish_reason` fault ([DONE] sent, no finish_reason ever) under the
*default* chain: an error on chat/completions streams (issue 8), strict-only in bodies."""

from __future__ import annotations

import pytest

from assay.core import DiagnosticCode, Endpoint
from assay.mock.faults import FAULT_HEADER
from assay.records.record import Completed, Errored
from tests.backend.test_against_mock import request_for, run_one


@pytest.mark.parametrize("endpoint", [Endpoint.chat, Endpoint.completions])
async def test_stream_without_finish_reason_is_errored_by_the_default_chain(
    mock_url: str, endpoint: Endpoint
) -> None:
    record = await run_one(
        mock_url,
        request_for(endpoint, True, "missing_finish_reason"),
        headers={FAULT_HEADER: "missing_finish_reason"},
    )
    assert isinstance(record.outcome, Errored), record.outcome
    assert record.outcome.diagnostic.code is DiagnosticCode.missing_finish_reason


@pytest.mark.parametrize("endpoint", [Endpoint.chat, Endpoint.completions])
async def test_body_without_finish_reason_passes_the_default_chain(
    mock_url: str, endpoint: Endpoint
) -> None:
    record = await run_one(
        mock_url,
        request_for(endpoint, False, "missing_finish_reason"),
        headers={FAULT_HEADER: "missing_finish_reason"},
    )
    assert isinstance(record.outcome, Completed), record.outcome
    assert record.outcome.response.finish_reason is None
