"""The types behind the one judgement (issue 10, items 1-4): requests refused when built wrong,
custom diagnostic codes, and records that say which part decided, read back from old runs too."""

from __future__ import annotations

import pickle

import orjson
import pytest
from pydantic import ValidationError
from returns.result import Failure, Result, Success

from assay.core import (
    CustomCode,
    DiagnosticCode,
    Endpoint,
    Evidence,
    GenerationRequest,
    GenerationResponse,
    ResponseTiming,
    Stage,
    TextAnswer,
    UnusableResponse,
    Usage,
)
from assay.metrics import StepAggregator
from assay.records import Completed, Errored, JudgedBy, RequestRecord
from assay.records.jsonl import record_from_line, record_line
from assay.validators import chain, default_chain, reject
from assay.worker import judge

NOT_POLITE = CustomCode("myorg.not_polite", meaning="the answer did not say please")

ANSWER = GenerationResponse(
    request_id="r1",
    endpoint=Endpoint.chat,
    streamed=True,
    answer=TextAnswer(text="Paris."),
    finish_reason="stop",
    usage=Usage(completion_tokens=2),
    terminal_seen=True,
    http_status=200,
    timing=ResponseTiming(send_ns=0, end_ns=10),
)


def polite(response: GenerationResponse) -> Result[GenerationResponse, UnusableResponse]:
    if "please" in response.text:
        return Success(response)
    return reject(response, NOT_POLITE, "no please")


def accept_all(response: GenerationResponse) -> Result[GenerationResponse, UnusableResponse]:
    return Success(response)


def own_evidence(response: GenerationResponse) -> Result[GenerationResponse, UnusableResponse]:
    # A user validator that builds its Failure by hand, with no evidence at all.
    return Failure(UnusableResponse(code=NOT_POLITE, message="no please"))


def record_of(
    verdict: Completed[GenerationResponse] | Errored,
) -> RequestRecord[GenerationResponse]:
    return RequestRecord[GenerationResponse](
        request_id="r1", targeted_start_ns=0, dispatched_ns=1, finished_ns=10, outcome=verdict
    )


@pytest.mark.parametrize(
    ("endpoint", "fields"),
    [
        (Endpoint.chat, {}),
        (Endpoint.chat, {"prompt": ("a", "b")}),
        (Endpoint.responses, {}),
        (Endpoint.completions, {"messages": ({"role": "user", "content": "hi"},)}),
        (Endpoint.embeddings, {}),
    ],
)
def test_request_without_what_its_endpoint_sends_is_refused_when_built(
    endpoint: Endpoint, fields: dict[str, object]
) -> None:
    # Issue 10, item 3: refused at construction, not recorded later as internal_error.
    with pytest.raises(ValidationError, match=f"{endpoint.value} request 'r1' has"):
        GenerationRequest.model_validate(
            {"request_id": "r1", "endpoint": endpoint, "model": "m", **fields}
        )


def test_chat_request_with_a_text_prompt_is_accepted() -> None:
    request = GenerationRequest(request_id="r1", endpoint=Endpoint.chat, model="m", prompt="hi")
    assert request.prompt == "hi"


@pytest.mark.parametrize("name", ["not_polite", "MyOrg.x", "myorg.", ".x", "my org.x", "a..b"])
def test_custom_code_must_be_namespaced(name: str) -> None:
    with pytest.raises(ValueError, match="not namespaced"):
        CustomCode(name)


@pytest.mark.parametrize("stage", [Stage.internal, Stage.user])
def test_custom_code_cannot_take_a_stage_reserved_for_assay(stage: Stage) -> None:
    with pytest.raises(ValueError, match="reserved"):
        CustomCode("myorg.x", stage=stage)


def test_custom_code_is_frozen_and_survives_pickling() -> None:
    code = CustomCode("myorg.late", stage=Stage.protocol, meaning="too late")
    with pytest.raises(AttributeError, match="frozen"):
        code.meaning = "other"
    back = pickle.loads(pickle.dumps(code))
    assert (back, back.stage, back.meaning, type(back)) == (
        code,
        Stage.protocol,
        "too late",
        CustomCode,
    )


def test_custom_code_round_trips_through_a_record_line() -> None:
    verdict = judge(Success(ANSWER), chain(default_chain(Endpoint.chat), polite))
    assert isinstance(verdict, Errored)
    line = orjson.loads(orjson.dumps(record_line(record_of(verdict))))
    assert (line["code"], line["stage"], line["judged_by"]) == (
        "myorg.not_polite",
        "content",
        "validator",
    )
    back = record_from_line(line)
    assert back == record_of(verdict)
    assert isinstance(back.outcome, Errored)
    assert type(back.outcome.diagnostic.code) is CustomCode


def test_custom_code_keeps_its_stage_through_a_record_line() -> None:
    late = CustomCode("myorg.late", stage=Stage.protocol)
    diagnostic = UnusableResponse(code=late, message="late")
    assert diagnostic.stage is Stage.protocol
    verdict = Errored(diagnostic=diagnostic, judged_by=JudgedBy.validator, validator="x:y")
    back = record_from_line(orjson.loads(orjson.dumps(record_line(record_of(verdict)))))
    assert isinstance(back.outcome, Errored)
    assert back.outcome.diagnostic.stage is Stage.protocol


def test_unknown_plain_code_in_a_record_is_refused() -> None:
    with pytest.raises(ValidationError, match="unknown diagnostic code 'not_polite'"):
        UnusableResponse.model_validate({"code": "not_polite", "message": "m"})


def test_custom_code_is_counted_under_its_own_name_in_step_metrics() -> None:
    aggregator = StepAggregator()
    aggregator.add(record_of(judge(Success(ANSWER), polite)))
    aggregator.add(record_of(judge(Success(ANSWER), default_chain(Endpoint.chat))))
    metrics = aggregator.snapshot()
    assert {str(code): s.count for code, s in metrics.errors_by_code.items()} == {
        "myorg.not_polite": 1
    }
    back = type(metrics).model_validate_json(metrics.model_dump_json())
    assert back.errors_by_code == metrics.errors_by_code


def test_validator_failure_carries_the_exchange_http_status_and_response() -> None:
    # Issue 8, item 8: even a Failure built by hand gets the status and the judged response.
    verdict = judge(Success(ANSWER), own_evidence)
    assert isinstance(verdict, Errored)
    assert verdict.diagnostic.evidence.http_status == 200
    assert verdict.diagnostic.evidence.partial == ANSWER
    assert verdict.validator == "tests.test_judgement_types:own_evidence"


def test_errored_names_a_validator_only_for_a_validator_verdict() -> None:
    diagnostic = UnusableResponse(code=DiagnosticCode.connect_error, message="refused")
    with pytest.raises(ValidationError, match="transport names no validator"):
        Errored(diagnostic=diagnostic, judged_by=JudgedBy.transport, validator="x")


def _old_line(code: DiagnosticCode, partial: GenerationResponse | None) -> dict[str, object]:
    """A records.jsonl line as written before verdicts named the part that decided."""
    verdict = Errored(
        diagnostic=UnusableResponse(
            code=code, message="m", evidence=Evidence(http_status=200, partial=partial)
        ),
        judged_by=JudgedBy.validator
        if code is DiagnosticCode.truncated_stream
        else JudgedBy.handler,
    )
    line = orjson.loads(orjson.dumps(record_line(record_of(verdict))))
    del line["judged_by"], line["validator"]
    if line["response"] is not None:
        del line["response"]["http_status"]
    return dict(line)


@pytest.mark.parametrize(
    ("code", "judged_by"),
    [
        (DiagnosticCode.no_terminal_response, JudgedBy.handler),
        (DiagnosticCode.unexpected_shape, JudgedBy.handler),
        (DiagnosticCode.bad_content_type, JudgedBy.handler),
        (DiagnosticCode.http_status, JudgedBy.transport),
        (DiagnosticCode.stream_interrupted, JudgedBy.transport),
        (DiagnosticCode.internal_error, JudgedBy.internal),
        (DiagnosticCode.truncated_stream, JudgedBy.validator),
        (DiagnosticCode.empty_response, JudgedBy.validator),
    ],
)
def test_old_record_without_judged_by_is_inferred_conservatively(
    code: DiagnosticCode, judged_by: JudgedBy
) -> None:
    back = record_from_line(_old_line(code, None))
    assert isinstance(back.outcome, Errored)
    assert (back.outcome.judged_by, back.outcome.validator) == (judged_by, None)


def test_old_empty_body_record_stays_errored_under_an_accept_all_revalidation() -> None:
    from assay.benchmark.revalidate import rejudge

    empty = ANSWER.model_copy(
        update={
            "answer": TextAnswer(),
            "finish_reason": None,
            "usage": None,
            "terminal_seen": False,
        }
    )
    old = record_from_line(_old_line(DiagnosticCode.no_terminal_response, empty))
    assert rejudge(old, accept_all) == old
    assert rejudge(old, default_chain(Endpoint.chat)) == old


def test_old_validator_verdict_is_judged_again_with_its_stored_status() -> None:
    from assay.benchmark.revalidate import rejudge

    cut = ANSWER.model_copy(update={"finish_reason": None, "terminal_seen": False})
    old = record_from_line(_old_line(DiagnosticCode.truncated_stream, cut))
    assert isinstance(rejudge(old, accept_all).outcome, Completed)
    again = rejudge(old, default_chain(Endpoint.chat)).outcome
    assert isinstance(again, Errored)
    assert again.diagnostic.code is DiagnosticCode.truncated_stream
    assert (again.validator, again.diagnostic.evidence.http_status) == ("truncated_stream", 200)
