"""assay beside the fastest peer measured so far, `vllm bench serve`, on the same mock, today.

The issue's peer figures were measured on another day, when a bare aiohttp loop served about
a third of what it serves now on this machine; a ratio across days says little. This part runs
both clients against one `assay mock --workers 1` (16-token streamed chat, 32-token prompts,
64 requests at once), alternating, and reports each one's served req/s and its CPU per request
in the steady state (the difference of a long and a short run, so start-up and imports cancel
out: vLLM's benchmark imports torch).

vLLM is not a dependency of assay: it is installed into its own virtual environment by
`scripts/install-servers vllm`, with the tokenizer of `scripts/install-servers model` (the
random dataset needs one). `--vllm-python` names another interpreter that has vLLM.

    python -m perf.peers [--cycles 3] [--seconds 10] [--vllm-python PATH]
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
from pathlib import Path
from typing import Any

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

ROOT = Path(__file__).resolve().parent.parent
VLLM_PYTHON = ROOT / ".servers" / "vllm" / "venv" / "bin" / "python"
TOKENIZER = ROOT / ".servers" / "model" / "tiny-llama"
SHORT_FRACTION = 5  # the short run asks for a fifth of the long run's requests

# vLLM's `vllm` entry point looks up a distribution named `vllm`, which the CPU wheel is not;
# its benchmark's own parser and main are called directly instead.
_VLLM_RUNNER = """
import sys
from vllm.utils.argparse_utils import FlexibleArgumentParser
from vllm.benchmarks.serve import add_cli_args, main
parser = FlexibleArgumentParser()
add_cli_args(parser)
main(parser.parse_args(sys.argv[1:]))
"""


def vllm_arguments(url: str, prompts: int, result_dir: Path) -> list[str]:
    """`vllm bench serve`'s options for the ceiling's workload against `url`."""
    return [
        "--backend", "openai-chat",
        "--base-url", url,
        "--endpoint", "/v1/chat/completions",
        "--model", "mock-model",
        "--tokenizer", str(TOKENIZER),
        "--dataset-name", "random",
        "--random-input-len", str(PROMPT_TOKENS),
        "--random-output-len", str(OUTPUT_TOKENS),
        "--ignore-eos",
        "--num-prompts", str(prompts),
        "--max-concurrency", str(CONCURRENCY),
        "--disable-tqdm",
        "--save-result",
        "--result-dir", str(result_dir),
        "--result-filename", "result.json",
    ]  # fmt: skip


def run_vllm(python: Path, url: str, prompts: int) -> dict[str, Any]:
    """One `vllm bench serve` run: its served req/s, completed and failed counts, CPU seconds."""
    with tempfile.TemporaryDirectory(prefix="assay-peer-") as folder:
        command = [str(python), "-c", _VLLM_RUNNER, *vllm_arguments(url, prompts, Path(folder))]
        cpu_before = children_cpu_seconds()
        started = time.perf_counter()
        done = subprocess.run(
            command,
            capture_output=True,
            timeout=900,
            env={**os.environ, "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1"},
            check=False,
        )
        wall_s = time.perf_counter() - started
        cpu_s = children_cpu_seconds() - cpu_before
        result_path = Path(folder) / "result.json"
        if done.returncode != 0 or not result_path.exists():
            tail = done.stderr.decode(errors="replace")[-1500:]
            raise RuntimeError(f"vllm bench serve exited {done.returncode}: {tail}")
        result = json.loads(result_path.read_text())
    return {
        "requests_per_s": round(float(result["request_throughput"]), 1),
        "completed": int(result["completed"]),
        "failed": int(result.get("failed", 0)),
        "benchmark_s": round(float(result["duration"]), 3),
        "wall_s": round(wall_s, 3),
        "cpu_s": round(cpu_s, 3),
    }


def _assay(mock: MockProcess, seconds: float) -> dict[str, Any]:
    arguments = [
        "--profile", "throughput", "--concurrency", str(CONCURRENCY),
        "--target", mock.url, "--endpoint", "chat",
        "--output-tokens", str(OUTPUT_TOKENS), "--prompt-tokens", str(PROMPT_TOKENS),
        "--max-seconds", f"{seconds:g}",
    ]  # fmt: skip
    run = run_assay(arguments, timeout_s=seconds + 120)
    return run_figures(run)


def measure(
    cycles: int = 3, seconds: float = 10.0, vllm_python: Path = VLLM_PYTHON
) -> dict[str, Any]:
    """`cycles` alternations of assay (default processes) and `vllm bench serve` on one mock."""
    if not vllm_python.exists():
        raise RuntimeError(
            f"no vLLM interpreter at {vllm_python.name}: run scripts/install-servers vllm model"
        )
    assay_runs: list[dict[str, Any]] = []
    vllm_runs: list[dict[str, Any]] = []
    with running_mock(output_tokens=OUTPUT_TOKENS, workers=1) as mock:
        # Size vLLM's runs to about `seconds` at the rate its first, short run reaches.
        probe = run_vllm(vllm_python, mock.url, 500)
        prompts = max(1000, int(probe["requests_per_s"] * seconds))
        for _ in range(cycles):
            long = _assay(mock, seconds)
            long["marginal_cpu_us_per_request"] = marginal_us(long, _assay(mock, seconds / 5))
            assay_runs.append(long)
            peer = run_vllm(vllm_python, mock.url, prompts)
            short = run_vllm(vllm_python, mock.url, max(prompts // SHORT_FRACTION, 200))
            peer["marginal_cpu_us_per_request"] = marginal_us(peer, short)
            vllm_runs.append(peer)
    pairs = zip(assay_runs, vllm_runs, strict=True)
    ratios = [mine["requests_per_s"] / peer["requests_per_s"] for mine, peer in pairs]
    return {
        "concurrency": CONCURRENCY,
        "output_tokens": OUTPUT_TOKENS,
        "prompt_tokens": PROMPT_TOKENS,
        "vllm_prompts_per_run": prompts,
        "assay_runs": assay_runs,
        "vllm_runs": vllm_runs,
        "assay_requests_per_s": statistics.median([run["requests_per_s"] for run in assay_runs]),
        "vllm_requests_per_s": statistics.median([run["requests_per_s"] for run in vllm_runs]),
        # Each assay run over the vLLM run right after it, then the median of those ratios.
        "assay_over_vllm": round(statistics.median(ratios), 2),
        "assay_over_vllm_runs": [round(ratio, 2) for ratio in ratios],
    }


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cycles", type=int, default=3)
    parser.add_argument("--seconds", type=float, default=10.0)
    parser.add_argument("--vllm-python", type=Path, default=VLLM_PYTHON)
    args = parser.parse_args(argv)
    print(json.dumps(measure(args.cycles, args.seconds, args.vllm_python), indent=1))
    return 0


if __name__ == "__main__":
    sys.exit(main())
