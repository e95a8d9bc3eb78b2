"""records.jsonl: one JSON line per request, written as requests complete and read back.

Writing is buffered and flushed on close; reading rebuilds each `RequestRecord` from its line
(`record_from_line` is the inverse of `record_line`), so a run can be re-judged later.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from pathlib import Path
from types import TracebackType
from typing import IO, Any, Final, NoReturn, Self, get_args

import orjson
from pydantic import BaseModel, ValidationError

from assay.core.answer import TextAnswer, ToolCall
from assay.core.diagnostics import Evidence, UnusableResponse
from assay.core.request import RequestEcho
from assay.core.response import (
    ExchangeIds,
    GenerationResponse,
    ResponseTiming,
    SentBody,
    Usage,
    stored_answer,
    stored_fields,
)
from assay.errors import DataError
from assay.file_writes import open_append, open_new
from assay.records.record import Cancelled, Completed, Errored, JudgedBy, RequestRecord

_RESPONSE_ELSEWHERE = {"timing", "usage", "ids"}


def record_line(record: RequestRecord[GenerationResponse]) -> dict[str, Any]:
    """The JSON object written for one record.

    Keys: id, step, `turn` (a multi-turn session's turn, only there), `model` (the model named,
    only when the run sends several), status, the three schedule times; for errored records
    code, stage, message, `judged_by` (transport, handler, validator or internal), `validator`
    (its name, for a validator's verdict) and the HTTP status, excerpt and traceback of the
    evidence; `ids` (the request id sent, the one echoed, the answer's own id and the
    traceparent: `ExchangeIds`) when any was sent or received; `timing`, `usage` and `response`
    (the compiled answer, or the partial one of an errored request, without its timing, usage
    and ids, which sit at the top level) when there is a response.

    >>> from assay.records import Cancelled
    >>> line = record_line(RequestRecord[GenerationResponse](request_id="r1",
    ...     targeted_start_ns=0, dispatched_ns=5, finished_ns=9, outcome=Cancelled()))
    >>> line["status"], line["reason"], line["response"]
    ('cancelled', 'cancelled', None)
    """
    line: dict[str, Any] = {"id": record.request_id, "step": record.step}
    if record.turn is not None:
        line["turn"] = record.turn
    if record.model is not None:
        line["model"] = record.model
    line["status"] = record.outcome.status
    line["targeted_start_ns"] = record.targeted_start_ns
    line["dispatched_ns"] = record.dispatched_ns
    line["finished_ns"] = record.finished_ns
    response: GenerationResponse | None = None
    ids: ExchangeIds | None = None
    outcome = record.outcome
    # Most records are completed: told by their type first, as a pydantic model's instance check
    # (what a class pattern makes, per arm) is a Python call.
    if type(outcome) is Completed or isinstance(outcome, Completed):
        response = outcome.response
    else:
        match outcome:
            case Errored(diagnostic=diagnostic, judged_by=judged_by, validator=validator):
                evidence = diagnostic.evidence
                line["code"] = diagnostic.code.value
                line["stage"] = diagnostic.stage.value
                line["message"] = diagnostic.message
                line["judged_by"] = judged_by.value
                line["validator"] = validator
                line["http_status"] = evidence.http_status
                line["excerpt"] = evidence.excerpt
                if evidence.traceback is not None:
                    line["traceback"] = evidence.traceback
                response = evidence.partial
                ids = evidence.ids
            case Cancelled(reason=reason):
                line["reason"] = reason
    if response is not None and response.ids is not None:
        ids = response.ids
    if ids is not None:
        line["ids"] = _plain(ids, ExchangeIds)
    if response is None:
        line["timing"] = line["usage"] = line["response"] = None
    elif type(response) is GenerationResponse:
        line["timing"] = _plain(response.timing, ResponseTiming)
        usage = response.usage
        line["usage"] = None if usage is None else _plain(usage, Usage)
        line["response"] = _stored_response(response)
    else:  # a subclass may add fields or serializers of its own: pydantic writes it
        line["timing"] = response.timing.model_dump()
        line["usage"] = None if response.usage is None else response.usage.model_dump()
        line["response"] = response.model_dump(exclude=_RESPONSE_ELSEWHERE)
    return line


def _plain(model: BaseModel, kind: type[BaseModel]) -> dict[str, Any]:
    """`model.model_dump()` for a flat model of exactly the type `kind`, at a fraction of the cost.

    A pydantic model keeps its field values in `__dict__`, in declaration order, and these models
    hold only JSON scalars, enums and tuples of them, which orjson writes as `model_dump`'s
    output would be written. A model of another type (a subclass) goes through pydantic.
    """
    if type(model) is kind:
        return dict(model.__dict__)
    return model.model_dump()


def _stored_response(response: GenerationResponse) -> dict[str, Any]:
    """`response.model_dump(exclude={"timing", "usage"})`, built from the models' fields.

    Written once per record, so it is built by hand: pydantic's serializer costs about ten
    microseconds a response here. The test suite checks the two write the same bytes. A field
    that holds a model, or a tuple or list of models, is dumped whatever its type, so an answer
    kind that adds one (an endpoint's own result) is written without a change here.
    """
    own = response.__dict__
    answer = own["answer"]
    if type(response) is GenerationResponse and type(answer) is TextAnswer:
        return _stored_text_response(own, answer.__dict__)
    fields: dict[str, Any] = {}
    for name, value in own.items():
        if name == "answer":
            fields.update(stored_answer(value))  # the flat keys records have always had
        elif name not in _RESPONSE_ELSEWHERE:
            fields[name] = value
    # A `GenerationResponse` itself holds models only in the fields that declare them, so only
    # those are looked at (an `isinstance` against a pydantic model costs about 0.1 us a field);
    # another answer kind may hold them anywhere.
    names = _MODEL_FIELDS if type(response) is GenerationResponse else tuple(fields)
    for name in names:
        value = fields.get(name)  # a kind's own keys are stored only on its answers
        if value is None:
            continue
        if isinstance(value, BaseModel):
            fields[name] = _plain(value, _FLAT.get(name, BaseModel))
        elif isinstance(value, (tuple, list)) and value and isinstance(value[0], BaseModel):
            kind = _FLAT.get(name, BaseModel)
            fields[name] = [_plain(item, kind) for item in value]
    return fields


def _stored_text_response(own: dict[str, Any], answer: dict[str, Any]) -> dict[str, Any]:
    """`_stored_response` of a `GenerationResponse` holding a `TextAnswer` (nearly every record):
    its stored keys in their order (`_BEFORE_ANSWER`, the answer's, `_AFTER_ANSWER`), from the
    models' `__dict__`, with no test per field."""
    fields = {name: own[name] for name in _BEFORE_ANSWER}
    fields["text"] = answer["text"]
    fields["reasoning"] = answer["reasoning"]
    calls = answer["tool_calls"]
    fields["tool_calls"] = [_plain(call, ToolCall) for call in calls] if calls else calls
    fields |= _NOT_TEXT
    for name in _AFTER_ANSWER:
        fields[name] = own[name]
    echo = fields["echo"]
    fields["echo"] = _plain(echo, RequestEcho)
    sent = fields["sent"]
    if sent is not None:
        fields["sent"] = _plain(sent, SentBody)
    return fields


def _models_in(annotation: object) -> set[type[BaseModel]]:
    """The pydantic models a field's type annotation names anywhere in it."""
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        return {annotation}
    return set().union(*(_models_in(argument) for argument in get_args(annotation)))


def _holds_model(annotation: object) -> bool:
    """Whether a field's type annotation names a pydantic model anywhere in it."""
    return bool(_models_in(annotation))


def _flat_model(annotation: object) -> type[BaseModel] | None:
    """The one model a field's annotation names (`X | None`, `tuple[X, ...]`) when it is flat:
    none of its own fields holds a model."""
    models = _models_in(annotation)
    if len(models) != 1:
        return None
    model = models.pop()
    flat = not any(_holds_model(field.annotation) for field in model.model_fields.values())
    return model if flat else None


# The stored fields of a `GenerationResponse` (its answer's flat keys in its place) whose declared
# type can hold a model.
_MODEL_FIELDS: tuple[str, ...] = tuple(
    name
    for name, field in stored_fields().items()
    if name not in _RESPONSE_ELSEWHERE and _holds_model(field.annotation)
)

# The flat models those fields hold, by field: written from `__dict__`; any other model is dumped.
_FLAT: dict[str, type[BaseModel]] = {
    name: model
    for name, field in stored_fields().items()
    if name in _MODEL_FIELDS and (model := _flat_model(field.annotation)) is not None
}


# A `GenerationResponse`'s stored fields before and after its answer's flat keys, and what a
# text answer stores under the keys of other kinds (`_stored_text_response`).
_FIELDS_IN_ORDER: tuple[str, ...] = tuple(GenerationResponse.model_fields)
_BEFORE_ANSWER: tuple[str, ...] = _FIELDS_IN_ORDER[: _FIELDS_IN_ORDER.index("answer")]
_AFTER_ANSWER: tuple[str, ...] = tuple(
    name
    for name in _FIELDS_IN_ORDER[_FIELDS_IN_ORDER.index("answer") + 1 :]
    if name not in _RESPONSE_ELSEWHERE
)
_NOT_TEXT: dict[str, Any] = {
    key: value
    for key, value in stored_answer(TextAnswer()).items()
    if key not in TextAnswer.STORED_AS
}


class RecordWriter:
    """Appends one JSON line per finished request; a context manager that flushes on exit.

    Lines are buffered and written `buffer_lines` at a time, so the file costs one write call
    per batch, not one per request.

    >>> import tempfile, pathlib
    >>> from assay.records import Cancelled
    >>> path = pathlib.Path(tempfile.mkdtemp()) / "requests.jsonl"
    >>> with RecordWriter(path) as writer:
    ...     writer.write(RequestRecord[GenerationResponse](request_id="r1",
    ...         targeted_start_ns=0, dispatched_ns=5, finished_ns=9, outcome=Cancelled()))
    >>> path.read_text().count("\\n"), writer.written
    (1, 1)
    """

    def __init__(
        self,
        path: Path,
        *,
        append: bool = False,
        buffer_lines: int = 256,
        opener: Callable[[Path], IO[bytes]] = open_new,
    ) -> None:
        self.path = path
        self._opener = opener
        self._append = append
        self._buffer_lines = buffer_lines
        self._buffer: list[bytes] = []
        self._file: IO[bytes] | None = None
        self.written = 0

    def __enter__(self) -> Self:
        self.open()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        # Flush even when the run failed: the records so far are the evidence.
        self.close()

    def open(self) -> None:
        """Create (or, with `append`, extend) the file; the parent directory is created too."""
        if self._file is not None:
            return
        self.path.parent.mkdir(parents=True, exist_ok=True)
        if self._append:
            self._file = open_append(self.path)
        else:
            # Created exclusively: a file or symlink already at `path` is refused, not written.
            self._file = self._opener(self.path)

    def write(self, record: RequestRecord[GenerationResponse]) -> None:
        """Queue one record's line; the buffer goes to disk when full."""
        if self._file is None:
            raise RuntimeError("RecordWriter.write before open(): use it as a context manager")
        self._buffer.append(orjson.dumps(record_line(record), option=orjson.OPT_APPEND_NEWLINE))
        self.written += 1
        if len(self._buffer) >= self._buffer_lines:
            self.flush()

    def flush(self) -> None:
        """Write the buffered lines and push them to the operating system."""
        if self._file is not None:
            self._flush_to(self._file)

    def _flush_to(self, file: IO[bytes]) -> None:
        """Write the buffered lines to `file` and flush it."""
        if self._buffer:
            lines = b"".join(self._buffer)
            self._buffer.clear()
            file.write(lines)
        file.flush()

    def close(self) -> None:
        """Flush and close; closing twice is harmless."""
        if self._file is None:
            return
        file, self._file = self._file, None
        try:
            self._flush_to(file)
        finally:
            # Closed even when the flush failed (a full disk): the error is the caller's to
            # report, the open file would only leak.
            with contextlib.suppress(OSError):
                file.close()


MAX_RECORD_LINE_BYTES: Final = 1 << 28
"""The longest records.jsonl line assay reads (256 MiB, four times the default
`--max-response-bytes`); a longer one is refused before it is held whole."""


def bounded_lines(path: Path, handle: IO[bytes]) -> Iterator[tuple[int, bytes]]:
    """The numbered lines of `handle`, each read up to `MAX_RECORD_LINE_BYTES`: a longer line
    is a `DataError` naming it, raised once that much is read, not after the whole line."""
    number = 0
    while True:
        raw = handle.readline(MAX_RECORD_LINE_BYTES + 1)
        if not raw:
            return
        number += 1
        if len(raw) > MAX_RECORD_LINE_BYTES:
            raise DataError(
                f"{path}, line {number}: longer than {MAX_RECORD_LINE_BYTES:,} bytes, more than "
                "any record assay writes (see docs/security.md)"
            )
        yield number, raw


_BLOCK_BYTES: Final = 1 << 20
"""How much `record_objects` reads at a time."""


def record_objects(path: Path) -> Iterator[dict[str, Any]]:
    """The JSON objects of a records.jsonl file as written (blank lines skipped), for readers
    that need a few keys of each line; a line that is not a JSON object is a `DataError`.

    The file is read a block at a time and split into lines (the readers after a run go through
    every record, and a `readline` per line is a fifth of what parsing it costs). A line longer
    than `MAX_RECORD_LINE_BYTES` is refused as `bounded_lines` refuses it, once that much of it
    and at most a block more is held.
    """
    loads, limit, number = orjson.loads, MAX_RECORD_LINE_BYTES, 0
    for raw in _split_lines(path, limit):
        number += 1
        try:
            line = loads(raw)
        except orjson.JSONDecodeError as error:
            if not raw.strip():
                continue
            raise DataError(f"{path}:{number}: not a JSON record ({error})") from None
        if type(line) is not dict:
            raise DataError(f"{path}:{number}: not a JSON object")
        yield line


def _split_lines(path: Path, limit: int) -> Iterator[bytes]:
    """The lines of `path` without their newlines, each refused past `limit` bytes (its newline
    counted, as `bounded_lines` counts it)."""
    number = 0
    head: list[bytes] = []  # the start of a line that continues past the blocks read so far
    held = 0
    with path.open("rb") as handle:
        while block := handle.read(_BLOCK_BYTES):
            lines = block.split(b"\n")
            if head:
                lines[0] = b"".join([*head, lines[0]])
                head.clear()
            tail = lines.pop()
            for raw in lines:
                number += 1
                if len(raw) >= limit:
                    _too_long(path, number, limit)
                yield raw
            if tail:
                head.append(tail)
                held = len(tail) if len(head) == 1 else held + len(tail)
                if held > limit:
                    _too_long(path, number + 1, limit)
    if head:
        yield b"".join(head)


def _too_long(path: Path, number: int, limit: int) -> NoReturn:
    raise DataError(
        f"{path}, line {number}: longer than {limit:,} bytes, more than any record assay "
        "writes (see docs/security.md)"
    )


def read_records(path: Path) -> Iterator[RequestRecord[GenerationResponse]]:
    """The records of a records.jsonl file, rebuilt from the lines `RecordWriter` wrote."""
    try:
        handle = path.open("rb")
    except OSError as error:
        raise DataError(f"cannot read {path}: {error.strerror or error}") from None
    with handle:
        for number, raw in bounded_lines(path, handle):
            if not raw.strip():
                continue
            try:
                yield record_from_line(orjson.loads(raw))
            except (orjson.JSONDecodeError, ValidationError, KeyError, TypeError) as error:
                summary = str(error).splitlines()[0]
                raise DataError(f"{path}, line {number}: not an assay record ({summary})") from None


def record_from_line(line: dict[str, Any]) -> RequestRecord[GenerationResponse]:
    """One record from its JSON line (the inverse of `record_line`).

    Lines written before `judged_by` was kept get it inferred conservatively from the code
    (`JudgedBy.inferred`): only a code no transport or handler produces counts as a validator's,
    so `assay revalidate` never judges an old transport or handler failure again.
    """
    response = None
    ids = line.get("ids")
    if line.get("response") is not None:
        response = GenerationResponse.model_validate(
            {**line["response"], "timing": line["timing"], "usage": line["usage"], "ids": ids}
        )
    record_outcome: Completed[GenerationResponse] | Errored | Cancelled
    match line["status"]:
        case "completed":
            if response is None:
                raise KeyError("a completed record without its response")
            record_outcome = Completed[GenerationResponse](response=response)
        case "errored":
            evidence = Evidence(
                http_status=line.get("http_status"),
                excerpt=line.get("excerpt"),
                partial=response,
                traceback=line.get("traceback"),
                # A partial answer holds the ids; without one the evidence does.
                ids=ids if response is None else None,
            )
            # The stored stage gives a custom code its stage; a built-in code's is checked.
            diagnostic = UnusableResponse.model_validate(
                {
                    "code": line["code"],
                    "stage": line.get("stage"),
                    "message": line["message"],
                    "evidence": evidence,
                }
            )
            judged_by = line.get("judged_by")
            record_outcome = Errored(
                diagnostic=diagnostic,
                judged_by=JudgedBy.inferred(diagnostic) if judged_by is None else judged_by,
                validator=line.get("validator"),
            )
        case "cancelled":
            record_outcome = Cancelled(reason=line.get("reason") or "cancelled")
        case other:
            raise KeyError(f"unknown status {other!r}")
    return RequestRecord[GenerationResponse](
        request_id=line["id"],
        step=line["step"],
        turn=line.get("turn"),
        model=line.get("model"),
        targeted_start_ns=line["targeted_start_ns"],
        dispatched_ns=line["dispatched_ns"],
        finished_ns=line["finished_ns"],
        outcome=record_outcome,
    )
