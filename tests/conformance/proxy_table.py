"""LiteLLM's proxy in front of an upstream that injects faults: which faults assay still sees.

Each fault gets its own upstream (assay's mock with the fault on every request, or llmock with a
stream fault or an error rate of 1), and one LiteLLM proxy routes a model name to each. assay runs
once directly against the upstream and once through the proxy, with `--server-metrics` pointed at
the upstream's own /metrics where it has one (the mock does, llmock does not), and the table
says what assay counted each time and what the cross-check said through the proxy.

A developer tool, not part of CI: scripts/conformance-proxy installs LiteLLM and runs it.
Usage: python -m tests.conformance.proxy_table --litellm BIN [--requests N] [--no-llmock]
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
import tempfile
import urllib.request
from collections import Counter
from dataclasses import dataclass
from pathlib import Path

from tests.conformance.drive import ASSAY, CliRun, run_cli
from tests.conformance.servers import SERVERS, RunningServer, serve

MASTER_KEY = "sk-assay-conformance-0123456789"
MOCK_MODEL = "assay-mock"
LLMOCK_MODEL = "gpt-4o"
# Faults of assay's mock, each injected on every request of its own mock.
MOCK_FAULTS = (
    "clean",
    "truncated_stream",
    "missing_done",
    "drop",
    "inband_error",
    "sse_error_event",
    "missing_finish_reason",
    "empty_stream",
    "wrong_usage",
    "invalid_json",
    "no_body",
    "html_200",
    "stall",
    "http_500",
    "http_429",
)
# llmock's own faults, as its command-line flags.
LLMOCK_FAULTS: dict[str, tuple[str, ...]] = {
    "clean": (),
    "truncate": ("--stream-fault", "truncate=1.0"),
    "disconnect": ("--stream-fault", "disconnect=1.0"),
    "malformed": ("--stream-fault", "malformed=1.0"),
    "error 500": ("--error-rate", "500=1.0"),
}
LOAD = (
    "--profile", "concurrent", "--concurrency", "4", "--prompt-tokens", "16", "--no-probe",
    "--timeout-idle", "5", "--timeout-total", "20",
)  # fmt: skip


@dataclass(frozen=True)
class Upstream:
    """One faulty upstream: its server, the model name it answers to, its metrics URL."""

    server: str
    fault: str
    running: RunningServer
    model: str
    metrics: str | None
    journal: Path | None
    # The mock answers as many tokens as asked; llmock ignores max_tokens and says a dozen words.
    output_tokens: int

    @property
    def route(self) -> str:
        """The model name LiteLLM routes to this upstream."""
        return f"{self.server}-{self.fault}".replace(" ", "-")

    def requests_seen(self) -> int:
        """Chat requests the upstream received so far, from its own journal."""
        if self.journal is not None:
            if not self.journal.exists():
                return 0
            lines = self.journal.read_text("utf-8").splitlines()
            return sum(1 for line in lines if "/v1/chat/completions" in line)
        with urllib.request.urlopen(self.running.url + "/_llmock/requests", timeout=10) as answer:
            entries = json.loads(answer.read())["requests"]
        return sum(1 for entry in entries if entry["path"] == "/v1/chat/completions")


def _cell(run: CliRun) -> str:
    if run.report_or_none is None:
        refused = next((line for line in run.output.splitlines() if line.startswith("error:")), "")
        return f"refused (exit {run.exit_code}): {refused.removeprefix('error: ')}"
    counted: Counter[str] = Counter(
        "completed" if r["status"] == "completed" else str(r["code"]) for r in run.records
    )
    return ", ".join(f"{count} {code}" for code, count in counted.most_common())


def _check(run: CliRun) -> str:
    section = (run.report_or_none or {}).get("server_metrics")
    if not section:
        return "-"
    names = {"requests_finished": "requests", "generation_tokens": "tokens"}
    disagreeing = [
        f"{names.get(c['quantity'], c['quantity'])} {c['server']:g} vs {c['assay']}"
        for c in section.get("checks") or []
        if not c["agrees"]
    ]
    verdict = "disagrees: " + ", ".join(disagreeing) if disagreeing else "agrees"
    return verdict + ("; **names a proxy**" if section.get("likely_cause") else "")


def _mock(stack: contextlib.ExitStack, logs: Path, fault: str) -> Upstream:
    journal = logs / f"mock-{fault}.jsonl"
    flags = [] if fault == "clean" else ["--fault", f"{fault}=1"]
    running = stack.enter_context(
        serve(
            f"mock-{fault}",
            lambda port: [
                str(ASSAY),
                "mock",
                "--port",
                str(port),
                "--output-tokens",
                "16",
                "--record-requests",
                str(journal),
                *flags,
            ],
            ready_path="/health",
            startup_s=60,
            log_dir=logs,
        )
    )
    return Upstream("mock", fault, running, MOCK_MODEL, running.url + "/metrics", journal, 16)


def _llmock(stack: contextlib.ExitStack, logs: Path, fault: str) -> Upstream:
    bin_dir = SERVERS / "llmock" / "venv" / "bin"
    flags = LLMOCK_FAULTS[fault]
    running = stack.enter_context(
        serve(
            f"llmock-{fault}".replace(" ", "-"),
            lambda port: [
                str(bin_dir / "llmock"),
                "serve",
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
                "--log-level",
                "warning",
                *flags,
            ],
            ready_path="/health",
            startup_s=60,
            log_dir=logs,
        )
    )
    return Upstream("llmock", fault, running, LLMOCK_MODEL, None, None, 64)


def _litellm(
    stack: contextlib.ExitStack, logs: Path, binary: str, upstreams: list[Upstream]
) -> RunningServer:
    entries = [
        {
            "model_name": upstream.route,
            "litellm_params": {
                "model": f"openai/{upstream.model}",
                "api_base": upstream.running.url + "/v1",
                "api_key": "none",
            },
        }
        for upstream in upstreams
    ]
    config = logs / "litellm.yaml"
    # JSON is YAML: no YAML writer needed.
    config.write_text(json.dumps({"model_list": entries}, indent=1), "utf-8")
    return stack.enter_context(
        serve(
            "litellm",
            lambda port: [
                binary,
                "--config",
                str(config),
                "--host",
                "127.0.0.1",
                "--port",
                str(port),
            ],
            ready_path="/health/liveliness",
            startup_s=180,
            log_dir=logs,
            env={"LITELLM_MASTER_KEY": MASTER_KEY, "LITELLM_LOCAL_MODEL_COST_MAP": "True"},
        )
    )


def _row(upstream: Upstream, proxy: RunningServer, requests: int, out: Path) -> tuple[str, ...]:
    metrics = ("--server-metrics", upstream.metrics or "off")
    tokens = ("--output-tokens", str(upstream.output_tokens))
    size = ("--max-requests", str(requests), *LOAD, *tokens, *metrics)
    before = upstream.requests_seen()
    direct = run_cli(
        upstream.running.url, out / f"{upstream.route}-direct", "--model", upstream.model, *size
    )
    middle = upstream.requests_seen()
    through = run_cli(proxy.url, out / f"{upstream.route}-proxy", "--model", upstream.route, *size)
    after = upstream.requests_seen()
    sent = f"{middle - before} / {after - middle}"
    row = (
        upstream.server, upstream.fault, _cell(direct), _cell(through), sent,
        _check(direct), _check(through),
    )  # fmt: skip
    print(" | ".join(row), file=sys.stderr, flush=True)  # progress
    return row


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--litellm", required=True, help="the litellm executable")
    parser.add_argument("--requests", type=int, default=8)
    parser.add_argument("--no-llmock", action="store_true", help="leave llmock out")
    args = parser.parse_args()
    # The key assay sends (to both; only the proxy checks it).
    os.environ["OPENAI_API_KEY"] = MASTER_KEY
    use_llmock = not args.no_llmock and (SERVERS / "llmock" / ".installed").exists()
    with (
        tempfile.TemporaryDirectory(prefix="assay-proxy-") as folder,
        contextlib.ExitStack() as stack,
    ):
        logs = Path(folder)
        upstreams = [_mock(stack, logs, fault) for fault in MOCK_FAULTS]
        if use_llmock:
            upstreams += [_llmock(stack, logs, fault) for fault in LLMOCK_FAULTS]
        proxy = _litellm(stack, logs, args.litellm, upstreams)
        rows = [_row(upstream, proxy, args.requests, logs) for upstream in upstreams]
    head = (
        "upstream", "fault", "assay direct", "assay through LiteLLM",
        "upstream requests (direct / through)", "cross-check direct",
        "cross-check through LiteLLM",
    )  # fmt: skip
    print("| " + " | ".join(head) + " |")
    print("|" + "---|" * len(head))
    for row in rows:
        print("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
    if not use_llmock:
        print("(llmock not installed: scripts/install-servers llmock adds its rows)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
