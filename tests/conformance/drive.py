"""Drive assay against a running server: the real CLI (`assay run`), or the library pipeline
(request source, backend, default validator chain, worker) for what the CLI cannot ask yet."""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
import uuid
from collections import Counter
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from pydantic import JsonValue

from assay.backend.client import open_backend
from assay.backend.settings import BackendSettings
from assay.config.run_config import RunConfig
from assay.core import Endpoint, GenerationRequest, GenerationResponse, MonotonicClock
from assay.data.source_config import source_of
from assay.records.record import Completed, Errored, RequestRecord
from assay.validators import default_chain
from assay.worker.execute import execute


def flat(**keys: object) -> RunConfig:
    """The config of flat keys, as a config file or the command line gives them."""
    return RunConfig.model_validate(keys)


ASSAY = Path(sys.executable).parent / "assay"
CLI_TIMEOUT_S = 240.0


@dataclass(frozen=True)
class CliRun:
    """What one `assay run` left: its exit code, output, report.json and records.jsonl."""

    exit_code: int
    output: str
    report_or_none: dict[str, Any] | None
    records: list[dict[str, Any]]

    @property
    def report(self) -> dict[str, Any]:
        """report.json; a run that wrote none fails the test with assay's output."""
        assert self.report_or_none is not None, (
            f"assay run exited {self.exit_code} with no report:\n{self.output}"
        )
        return self.report_or_none

    @property
    def outcomes(self) -> dict[str, int]:
        """dispatched / completed / errored / cancelled over the whole run."""
        outcomes: dict[str, int] = self.report["totals"]["outcomes"]
        return outcomes

    @property
    def errors_by_code(self) -> dict[str, int]:
        """Errored requests counted by diagnostic code, from the records."""
        self.report  # noqa: B018 (a run that wrote no report fails here, with its output)
        return dict(Counter(r["code"] for r in self.records if r["status"] == "errored"))

    def completed(self) -> list[dict[str, Any]]:
        """The records of completed requests."""
        return [r for r in self.records if r["status"] == "completed"]


def run_cli(target: str, output_dir: Path, *args: str) -> CliRun:
    """Run `assay run --target TARGET ...` in a child process, bounded in time, one load
    process, and read what it wrote (nothing, when it stopped before the run: exit 2)."""
    command = [
        str(ASSAY),
        "run",
        "--target",
        target,
        "--processes",
        "1",
        "--output-dir",
        str(output_dir),
        *args,
    ]
    done = subprocess.run(
        command,
        capture_output=True,
        text=True,
        timeout=CLI_TIMEOUT_S,
        check=False,
        stdin=subprocess.DEVNULL,
    )
    output = done.stdout + done.stderr
    report_path = output_dir / "report.json"
    records_path = output_dir / "records.jsonl"
    report = json.loads(report_path.read_text("utf-8")) if report_path.exists() else None
    lines = records_path.read_text("utf-8").splitlines() if records_path.exists() else []
    records = [json.loads(line) for line in lines if line.strip()]
    return CliRun(exit_code=done.returncode, output=output, report_or_none=report, records=records)


def requests_for(
    endpoint: Endpoint,
    *,
    model: str,
    count: int,
    stream: bool = True,
    prompt_tokens: int = 16,
    output_tokens: int = 16,
    ignore_eos: bool = False,
    extra_body: dict[str, JsonValue] | None = None,
    uuid_ids: bool = False,
) -> list[GenerationRequest]:
    """`count` requests exactly as `assay run` builds them (synthetic prompts, its request ids),
    with `extra_body` set as the future `--extra-body` flag would. `uuid_ids` gives each a UUID
    id, for servers that reject other `X-Request-Id` values, so that a test of something else
    does not depend on the ids assay sends."""
    config = flat(
        endpoint=endpoint,
        model=model,
        stream=stream,
        prompt_tokens=str(prompt_tokens),
        output_tokens=str(output_tokens),
        ignore_eos=ignore_eos,
    )
    source = source_of(config.source, config.request, config.target.endpoint, model, config.seed)
    requests = [source.request(index) for index in range(count)]
    update: dict[str, object] = {}
    if extra_body is not None:
        update["extra_body"] = extra_body
    return [
        r.model_copy(update={**update, "request_id": str(uuid.uuid4())} if uuid_ids else update)
        for r in requests
    ]


def send(
    target: str,
    requests: list[GenerationRequest],
    *,
    concurrency: int = 1,
    strict: bool = False,
    timeout_s: float = 120.0,
) -> list[RequestRecord[GenerationResponse]]:
    """Send `requests` through assay's backend, default validator chain and worker, at most
    `concurrency` at a time; one terminal record per request, in request order."""
    return asyncio.run(_send(target, requests, concurrency, strict, timeout_s))


async def _send(
    target: str,
    requests: list[GenerationRequest],
    concurrency: int,
    strict: bool,
    timeout_s: float,
) -> list[RequestRecord[GenerationResponse]]:
    settings = BackendSettings(base_url=target, max_connections=concurrency)
    clock = MonotonicClock()
    gate = asyncio.Semaphore(concurrency)
    sunk: list[RequestRecord[GenerationResponse]] = []

    async with open_backend(settings, clock) as backend:

        async def one(request: GenerationRequest) -> RequestRecord[GenerationResponse]:
            async with gate:
                return await execute(
                    request,
                    request_id=request.request_id,
                    resolve=backend.resolve,
                    validate=default_chain(request.endpoint, strict),
                    clock=clock,
                    targeted_start_ns=clock.now_ns(),
                    sink=sunk.append,
                )

        async with asyncio.timeout(timeout_s), asyncio.TaskGroup() as group:
            tasks = [group.create_task(one(r)) for r in requests]
        return [task.result() for task in tasks]


def outcome_code(record: RequestRecord[GenerationResponse]) -> str:
    """ "completed", the diagnostic code of an errored record, or "cancelled"."""
    match record.outcome:
        case Completed():
            return "completed"
        case Errored(diagnostic=diagnostic):
            return str(diagnostic.code)
        case _:
            return "cancelled"


def codes(records: list[RequestRecord[GenerationResponse]]) -> Counter[str]:
    """How many records ended each way (see `outcome_code`)."""
    return Counter(outcome_code(r) for r in records)


def responses(records: list[RequestRecord[GenerationResponse]]) -> list[GenerationResponse]:
    """The responses of the completed records."""
    return [r.outcome.response for r in records if isinstance(r.outcome, Completed)]
