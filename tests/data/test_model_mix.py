"""Traffic mixes (issue 39): `--model a=0.7,b=0.2,c=0.1` parsed and refused, request `i`'s model a
pure function of (seed, i) on every kind of source, a data row's `model` column over the mix."""

from __future__ import annotations

import json
import pickle
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest
from pydantic import ValidationError

from assay.config import RunConfig
from assay.core import Endpoint
from assay.data.file_source import FileSource, FileSourceConfig
from assay.data.session import FileSessions, SyntheticSessions
from assay.data.source import RequestSource, sends_several_models
from assay.data.source_config import source_of
from assay.data.synthetic import SyntheticSource
from assay.data.token_count import FixedCount
from assay.data.trace import TraceConfig, load_trace
from assay.errors import DataError
from assay.spec.model_mix import ModelMix, parse_models, round_robin_pattern
from assay.spec.run import RunEcho
from assay.spec.target import Target

MIX = ModelMix.of("a=0.7,b=0.2,c=0.1")


@pytest.mark.parametrize(
    ("text", "says"),
    [
        ("a=0.7,a=0.3", "model 'a' is named twice"),
        ("a=-0.5,b=1", "weight '-0.5' must be a finite number >= 0"),
        ("a=0,b=0", "the weights sum to zero"),
        ("a,,b", "has an empty model name"),
        ("=1,b=1", "has an empty model name"),
        ("a=x,b=1", "weight 'x' is not a number"),
        ("a=inf,b=1", "must be a finite number"),
        ("a=1,b", "give every model a weight"),
    ],
)
def test_a_bad_mix_is_refused_saying_why(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        parse_models(text)
    with pytest.raises(ValidationError, match=says):
        Target(model=text)


def test_weights_are_normalised_and_a_list_weighs_models_alike() -> None:
    assert ModelMix.of("a=3,b=1").shares() == {"a": 0.75, "b": 0.25}
    assert ModelMix.of("a, b, c").shares() == pytest.approx({"a": 1 / 3, "b": 1 / 3, "c": 1 / 3})


def test_a_single_model_is_no_mix_and_stays_as_written() -> None:
    assert Target(model="meta-llama/Llama-3.1-8B").mix() is None
    assert Target(model="meta-llama/Llama-3.1-8B").model == "meta-llama/Llama-3.1-8B"
    assert Target(model="x=1").model == "x"  # one weighted name is one model
    assert Target(model="x=1").mix() is None


def test_model_mix_without_several_models_is_refused() -> None:
    with pytest.raises(ValidationError, match="--model-mix picks among the models of a mix"):
        Target(model="m", model_mix="round-robin")


def test_config_file_list_and_table_are_mixes() -> None:
    listed = RunConfig.model_validate({"model": ["a", "b"], "model_mix": "round-robin"})
    table = RunConfig.model_validate({"model": {"a": 0.7, "b": 0.3}})
    assert listed.target.model == "a,b"
    assert listed.target.mix() == ModelMix.of("a,b", "round-robin")
    assert table.target.model == "a=0.7,b=0.3"
    assert table.target.mix() == ModelMix.of("a=0.7,b=0.3")


def test_random_picks_follow_the_weights() -> None:
    picks = Counter(MIX.pick(42, index) for index in range(20_000))
    # Binomial sd at n=20,000 is at most 65 requests; 5 sd either way.
    assert abs(picks["a"] - 14_000) < 330
    assert abs(picks["b"] - 4_000) < 330
    assert abs(picks["c"] - 2_000) < 330


def test_random_picks_are_a_function_of_seed_and_index() -> None:
    first = [MIX.pick(7, index) for index in range(500)]
    assert first == [MIX.pick(7, index) for index in range(500)]
    assert first != [MIX.pick(8, index) for index in range(500)]
    # Backwards, or after a pickle round trip (how a source reaches a load process or a Ray
    # actor), each index picks the same.
    thawed = pickle.loads(pickle.dumps(MIX))
    assert [thawed.pick(7, index) for index in reversed(range(500))] == first[::-1]


def test_another_interpreter_picks_the_same_models() -> None:
    # A fresh process (its own hash salt) reads the same picks: nothing process-local decides.
    code = (
        "from assay.spec.model_mix import ModelMix;"
        "m = ModelMix.of('a=0.7,b=0.2,c=0.1');"
        "print(''.join(m.pick(3, i) for i in range(300)))"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], capture_output=True, text=True, check=True, timeout=60
    )
    assert out.stdout.strip() == "".join(MIX.pick(3, index) for index in range(300))


def test_round_robin_cycles_the_weights_as_counts() -> None:
    mix = ModelMix.of("a=2,b=1", "round-robin")
    assert [mix.pick(0, index) for index in range(7)] == ["a", "a", "b", "a", "a", "b", "a"]
    assert round_robin_pattern(("a", "b", "c"), (0.7, 0.2, 0.1)) == (
        *("a",) * 7,
        "b",
        "b",
        "c",
    )
    assert [ModelMix.of("x,y,z", "round-robin").pick(9, i) for i in range(4)] == list("xyzx")


def test_a_round_robin_pattern_too_long_is_refused() -> None:
    with pytest.raises(ValidationError, match="give small whole-number weights"):
        Target(model="a=0.999,b=0.001,c=0.0011", model_mix="round-robin")


def _synthetic(**changes: object) -> SyntheticSource:
    return SyntheticSource.model_validate(
        {
            "model": "a",
            "mix": MIX,
            "seed": 11,
            "prompt_tokens": FixedCount(value=8),
            "output_tokens": FixedCount(value=4),
            **changes,
        }
    )


@pytest.mark.parametrize("endpoint", [Endpoint.chat, Endpoint.completions, Endpoint.embeddings])
def test_every_synthetic_request_names_its_pick(endpoint: Endpoint) -> None:
    source = _synthetic(endpoint=endpoint)
    assert sends_several_models(source)
    for index in (0, 1, 2, 3, 50, 999):  # 0 first: the plain-text path caches its fields there
        assert source.request(index).model == MIX.pick(11, index)
    assert len({source.request(index).model for index in range(100)}) == 3


def test_a_single_model_source_sends_one_model_and_stamps_none() -> None:
    source = _synthetic(mix=None)
    assert not sends_several_models(source)
    assert {source.request(index).model for index in range(100)} == {"a"}


def test_a_session_names_one_model_on_every_turn() -> None:
    sessions = SyntheticSessions(_synthetic(), turns=3)
    assert sends_several_models(sessions)
    for index in range(30):
        session = sessions.session(index)
        models = {session.request(turn, ()).model for turn in range(3)}
        assert models == {MIX.pick(11, index)}


def _write(tmp_path: Path, rows: list[dict[str, object]]) -> Path:
    path = tmp_path / "rows.jsonl"
    path.write_text("".join(json.dumps(row) + "\n" for row in rows), encoding="utf-8")
    return path


def test_a_rows_model_column_wins_over_the_mix(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"prompt": "one", "model": "lora-x"}, {"prompt": "two"}] * 20)
    rows = FileSource.load(FileSourceConfig(path=path, model="a", mix=MIX, seed=11))
    for index in range(40):
        request = rows.request(index)
        expected = "lora-x" if index % 2 == 0 else MIX.pick(11, index)
        assert request.model == expected
        assert "model" not in request.extra_body  # interpreted, not sent as a body field


def test_rows_naming_models_make_a_single_model_run_send_several(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"prompt": "one", "model": "lora-x"}, {"prompt": "two"}])
    rows = FileSource.load(FileSourceConfig(path=path, model="base"))
    assert [rows.request(index).model for index in range(2)] == ["lora-x", "base"]
    assert sends_several_models(rows)
    plain = FileSource.load(FileSourceConfig(path=_write(tmp_path, [{"prompt": "p"}]), model="m"))
    assert not sends_several_models(plain)


def test_a_csv_model_column_names_the_model(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_text("prompt,model\nhello,lora-y\nthere,\n", encoding="utf-8")
    rows = FileSource.load(FileSourceConfig(path=path, model="base"))
    assert [rows.request(index).model for index in range(2)] == ["lora-y", "base"]


def test_a_model_column_that_is_not_a_name_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, [{"prompt": "one", "model": 7}])
    with pytest.raises(DataError, match=r"line 1: 'model' must be a model name \(text\)"):
        FileSource.load(FileSourceConfig(path=path, model="base"))


def test_a_multi_turn_row_names_the_model_of_its_session(tmp_path: Path) -> None:
    path = _write(
        tmp_path, [{"turns": ["hi", "more"], "model": "lora-z"}, {"turns": ["hi", "again"]}]
    )
    rows = FileSource.load(FileSourceConfig(path=path, model="a", mix=MIX, seed=11))
    sessions = FileSessions.of(rows)
    assert {sessions.session(0).request(t, ()).model for t in range(2)} == {"lora-z"}
    assert {sessions.session(1).request(t, ()).model for t in range(2)} == {MIX.pick(11, 1)}


def test_a_trace_names_each_requests_pick(tmp_path: Path) -> None:
    path = tmp_path / "trace.jsonl"
    path.write_text(
        "".join(
            json.dumps({"timestamp": t, "input_length": 32, "output_length": 4, "hash_ids": [1]})
            + "\n"
            for t in range(40)
        ),
        encoding="utf-8",
    )
    trace: RequestSource = load_trace(TraceConfig(path=path, model="a", mix=MIX, seed=11))
    assert sends_several_models(trace)
    assert [trace.request(i).model for i in range(40)] == [MIX.pick(11, i) for i in range(40)]


def test_the_run_config_builds_a_mixed_source() -> None:
    config = RunConfig.model_validate({"model": "a=0.7,b=0.2,c=0.1", "seed": 5})
    mix = config.target.mix()
    source = source_of(config.source, config.request, config.target.endpoint, "a", 5, mix)
    assert [source.request(i).model for i in range(60)] == [MIX.pick(5, i) for i in range(60)]


def test_the_echo_keeps_the_mix_and_an_older_report_loads_without_it() -> None:
    config = RunConfig.model_validate({"model": "a=3,b=1", "model_mix": "round-robin"})
    echo = config.echo(
        resolved_target=None,
        resolved_model=config.target.model,
        validator_chain="default chat chain",
        processes=1,
        interrupted=False,
        degraded=False,
    )
    written = json.loads(echo.model_dump_json())
    assert (written["model"], written["model_mix"]) == ("a=3,b=1", "round-robin")
    older = RunEcho.model_validate_json('{"model": "m", "seed": 1}')
    assert older["model"] == "m"
    assert json.loads(older.model_dump_json()) == {"model": "m", "seed": 1}
