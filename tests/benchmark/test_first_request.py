"""The run's first request is built once before the load: the tokenizer preload and the probe
share it (it was built twice, once for each)."""

from __future__ import annotations

from pathlib import Path

import pytest

from assay.benchmark.run import run_from_config
from assay.config import RunConfig
from assay.core import GenerationRequest
from assay.data import SyntheticSource
from assay.mock import MockConfig, start_mock_processes


def flat(**keys: object) -> RunConfig:
    """The config of flat keys, as a config file or the command line gives them."""
    return RunConfig.model_validate(keys)


def test_first_request_is_built_once_for_the_preload_and_the_probe(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    built: list[int] = []
    build = SyntheticSource.request

    def counted(source: SyntheticSource, index: int) -> GenerationRequest:
        built.append(index)
        return build(source, index)

    monkeypatch.setattr(SyntheticSource, "request", counted)
    with start_mock_processes(MockConfig()) as url:
        outcome = run_from_config(
            flat(target=url, max_requests=3, processes=1, output_dir=tmp_path / "run")
        )
    assert outcome.report.steps[0].metrics.outcomes.dispatched == 3
    # Once before the load (preload and probe), once by the load itself.
    assert built.count(0) == 2
