"""assay beside vLLM's Rust benchmark client (`vllm-rs bench serve`) on one mock, in one run.

Each cycle runs, against the same `assay mock --workers 1` (16-token streamed chat, 32-token
prompts, 64 requests at once): assay with its default processes, assay `--processes 1`,
assay `--processes 1` with a transport that sends nothing (`perf.free_transport`), the Rust
client, and the bare aiohttp loop. Each reports served req/s and client CPU µs per request,
taken as the difference of a long and a short run (start-up and imports cancel out). CPU time
is far less disturbed by other load than wall time; how busy the machine was besides these
runs is reported too (CPU the rest of the machine used, in cores, and the load average).

The Rust client comes out of the vLLM wheel (`pip download vllm==VERSION --no-deps`; only
`vllm/vllm-rs` is unpacked), cached outside the repository under `~/.cache/assay-perf`
(`ASSAY_PERF_CACHE` moves it). Its random dataset needs a tokenizer: a tiny word-level one is
written there with the `tokenizers` package (in the dev extra).

    python -m perf.rust_peer [--cycles 3] [--seconds 10] [--vllm-version 0.33.0]
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import zipfile
from pathlib import Path
from typing import Any

import psutil  # type: ignore[import-untyped]  # no stubs installed; benchmarks only

from perf.ceiling import SHORT_SECONDS, bare_loop_for, ceiling_arguments, loop_figures
from perf.free_transport import _assay_free, captured_answer
from perf.harness import (
    CONCURRENCY,
    OUTPUT_TOKENS,
    PROMPT_TOKENS,
    MockProcess,
    children_cpu_seconds,
    marginal_us,
    run_assay,
    run_figures,
    running_mock,
)
from perf.perf_doc import DOC_PATH, RUST_PEER_PATH, rust_peer_table, write_doc

CACHE = Path(os.environ.get("ASSAY_PERF_CACHE", Path.home() / ".cache" / "assay-perf"))
VLLM_VERSION = "0.33.0"
_MEMBER = "vllm/vllm-rs"


def rust_client(version: str = VLLM_VERSION) -> Path:
    """The `vllm-rs` binary of vLLM `version`, unpacked from its wheel (downloaded once)."""
    binary = CACHE / f"vllm-{version}" / "vllm-rs"
    if binary.exists():
        return binary
    wheels = CACHE / "wheels"
    found = sorted(wheels.glob(f"vllm-{version}-*.whl"))
    if not found:
        subprocess.run(
            [sys.executable, "-m", "pip", "download", f"vllm=={version}", "--no-deps",
             "-d", str(wheels)],
            check=True, timeout=1800,
        )  # fmt: skip
        found = sorted(wheels.glob(f"vllm-{version}-*.whl"))
    with zipfile.ZipFile(found[0]) as wheel:
        if _MEMBER not in wheel.namelist():
            raise RuntimeError(f"the vllm {version} wheel holds no {_MEMBER}: take a newer one")
        binary.parent.mkdir(parents=True, exist_ok=True)
        binary.write_bytes(wheel.read(_MEMBER))
    binary.chmod(0o755)
    return binary


def tiny_tokenizer() -> Path:
    """A word-level tokenizer folder (`tokenizer.json`) the Rust client accepts."""
    folder = CACHE / "tiny-tokenizer"
    if (folder / "tokenizer.json").exists():
        return folder
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers

    words = ["[UNK]", *(f"w{index}" for index in range(2000))]
    tokenizer = Tokenizer(
        models.WordLevel({word: index for index, word in enumerate(words)}, "[UNK]")
    )
    tokenizer.pre_tokenizer = pre_tokenizers.WhitespaceSplit()
    tokenizer.decoder = decoders.WordPiece()  # joins the words with spaces
    folder.mkdir(parents=True, exist_ok=True)
    tokenizer.save(str(folder / "tokenizer.json"))
    (folder / "tokenizer_config.json").write_text(
        json.dumps({"tokenizer_class": "PreTrainedTokenizerFast", "model_max_length": 4096})
    )
    return folder


def run_rust(binary: Path, url: str, prompts: int) -> dict[str, Any]:
    """One `vllm-rs bench serve` run of `prompts` requests: served req/s, counts, CPU s."""
    with tempfile.TemporaryDirectory(prefix="assay-rust-peer-") as folder:
        command = [
            str(binary), "bench", "serve", "--backend", "openai-chat", "--base-url", url,
            "--endpoint", "/v1/chat/completions", "--model", "mock-model",
            "--tokenizer", str(tiny_tokenizer()), "--dataset-name", "random",
            "--random-input-len", str(PROMPT_TOKENS), "--random-output-len", str(OUTPUT_TOKENS),
            "--ignore-eos", "--num-prompts", str(prompts),
            "--max-concurrency", str(CONCURRENCY), "--disable-tqdm", "--save-result",
            "--result-dir", folder, "--result-filename", "result.json",
        ]  # fmt: skip
        cpu_before = children_cpu_seconds()
        done = subprocess.run(command, capture_output=True, timeout=600, check=False)
        cpu_s = children_cpu_seconds() - cpu_before
        result_path = Path(folder) / "result.json"
        if done.returncode != 0 or not result_path.exists():
            tail = done.stderr.decode(errors="replace")[-1500:]
            raise RuntimeError(f"vllm-rs bench serve exited {done.returncode}: {tail}")
        result = json.loads(result_path.read_text())
    return {
        "requests_per_s": round(float(result["request_throughput"]), 1),
        "completed": int(result["completed"]),
        "failed": int(result.get("failed", 0)),
        "cpu_s": round(cpu_s, 3),
    }


def _assay(mock: MockProcess, seconds: float, processes: int | None) -> dict[str, Any]:
    run = run_assay(ceiling_arguments(mock.url, seconds, processes), timeout_s=seconds + 120)
    return run_figures(run)


def _assay_pair(mock: MockProcess, seconds: float, processes: int | None) -> dict[str, Any]:
    long = _assay(mock, seconds, processes)
    long["cpu_us_per_request"] = marginal_us(long, _assay(mock, SHORT_SECONDS, processes))
    return long


def _rust_pair(binary: Path, mock: MockProcess, prompts: int) -> dict[str, Any]:
    long = run_rust(binary, mock.url, prompts)
    long["cpu_us_per_request"] = marginal_us(
        long, run_rust(binary, mock.url, max(prompts // 10, 200))
    )
    return long


def _cycle(
    binary: Path, mock: MockProcess, seconds: float, prompts: int, answer: bytes
) -> dict[str, Any]:
    free = _assay_free(mock, seconds, answer)
    bare = loop_figures(mock, seconds, loop_for=bare_loop_for)
    return {
        "assay_default": _assay_pair(mock, seconds, None),
        "assay_processes_1": _assay_pair(mock, seconds, 1),
        "assay_free_transport": {
            "requests_per_s": free["long"]["requests_per_s"],
            "cpu_us_per_request": free["marginal_client_cpu_us_per_request"],
        },
        "vllm_rs": _rust_pair(binary, mock, prompts),
        "bare_aiohttp_loop": {
            "requests_per_s": bare["requests_per_s"],
            "cpu_us_per_request": bare["client_cpu_us_per_request"],
        },
    }


def measure(cycles: int, seconds: float, version: str) -> dict[str, Any]:
    binary = rust_client(version)
    tiny_tokenizer()
    load_before = os.getloadavg()
    busy_before = psutil.cpu_times()
    ours_before = children_cpu_seconds()
    started = time.perf_counter()
    runs: list[dict[str, Any]] = []
    with running_mock(output_tokens=OUTPUT_TOKENS, workers=1) as mock:
        mock_before = mock.cpu_seconds()
        answer = captured_answer(mock.url)
        probe = run_rust(binary, mock.url, 1000)
        prompts = max(2000, int(probe["requests_per_s"] * seconds))
        for _ in range(cycles):
            runs.append(_cycle(binary, mock, seconds, prompts, answer))
        mock_cpu = mock.cpu_seconds() - mock_before
    wall = time.perf_counter() - started
    busy_after = psutil.cpu_times()
    machine_busy = sum(busy_after[:3]) - sum(busy_before[:3])  # user, nice, system
    # This process's own share (the bare loop, the free transport's set-up) counts as ours too.
    ours = children_cpu_seconds() - ours_before + mock_cpu + sum(os.times()[:2])
    clients = list(runs[0])
    summary = {
        name: {
            "requests_per_s": [run[name]["requests_per_s"] for run in runs],
            "cpu_us_per_request": [run[name]["cpu_us_per_request"] for run in runs],
        }
        for name in clients
    }
    return {
        "concurrency": CONCURRENCY,
        "output_tokens": OUTPUT_TOKENS,
        "prompt_tokens": PROMPT_TOKENS,
        "vllm_version": version,
        "rust_prompts_per_run": prompts,
        "cores": psutil.cpu_count(),
        "load_average_before": [round(value, 2) for value in load_before],
        "other_load_cores": round(max(machine_busy - ours, 0.0) / wall, 2),
        "summary": summary,
        "ratios": _ratios(summary),
        "runs": runs,
    }


def _ratios(summary: dict[str, dict[str, list[Any]]]) -> dict[str, float | None]:
    def median(name: str, figure: str) -> float | None:
        values = [value for value in summary[name][figure] if value is not None]
        return statistics.median(values) if values else None

    rust_rate = median("vllm_rs", "requests_per_s")
    rust_cpu = median("vllm_rs", "cpu_us_per_request")
    default_rate = median("assay_default", "requests_per_s")
    one_cpu = median("assay_processes_1", "cpu_us_per_request")
    free_cpu = median("assay_free_transport", "cpu_us_per_request")
    bare_cpu = median("bare_aiohttp_loop", "cpu_us_per_request")
    return {
        "default_rate_over_rust": _over(default_rate, rust_rate),
        "processes_1_cpu_over_rust": _over(one_cpu, rust_cpu),
        "free_transport_cpu_over_bare_loop": _over(free_cpu, bare_cpu),
    }


def _over(mine: float | None, theirs: float | None) -> float | None:
    return round(mine / theirs, 2) if mine is not None and theirs else None


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m perf.rust_peer", description=__doc__)
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--vllm-version", default=VLLM_VERSION)
    parser.add_argument(
        "--write-doc",
        action="store_true",
        help=f"keep the figures in perf/results/{RUST_PEER_PATH.name} and regenerate "
        "docs/performance.md, whose first table they are",
    )
    options = parser.parse_args(argv)
    figures = measure(options.cycles, options.seconds, options.vllm_version)
    figures["command"] = (
        f"python -m perf.rust_peer --cycles {options.cycles} --seconds {options.seconds:g}"
        f" --vllm-version {options.vllm_version} --write-doc"
    )
    figures["date"] = time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())
    print(json.dumps(figures, indent=1))
    print(rust_peer_table(figures))
    if options.write_doc:
        from perf.suite import load_latest

        RUST_PEER_PATH.write_text(json.dumps(figures, indent=1) + "\n")
        write_doc(load_latest(), DOC_PATH)
    return 0


if __name__ == "__main__":
    sys.exit(main())
