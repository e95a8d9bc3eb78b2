"""A config file is read only if it is a regular file (a FIFO given as `--config` hung the run),
a JSON config's repeated key is refused as TOML's is (`{"max_seconds": 1, "max_seconds": 2}`
ran 2 s), and a key may be written as its flag is spelled (`header` for `--header`), as the
README's "a config file holds the flags' keys" says."""

from __future__ import annotations

import os
import threading
import tomllib
from collections.abc import Iterator
from pathlib import Path

import pytest

from assay.config import build_config, load_config_file
from assay.config.run_config import FLAG_SPELLINGS
from assay.errors import ConfigError
from assay.spec.flat import flag_of


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def _refusal(path: Path) -> str:
    with pytest.raises(ConfigError) as raised:
        load_config_file(path)
    return str(raised.value)


@pytest.fixture
def fifo(tmp_path: Path) -> Iterator[Path]:
    """A named pipe; should its reader wait in `open`, a writer that opens and closes it (within
    30 attempts a second apart) lets it read an empty file and fail, rather than hang."""
    path = tmp_path / "bench.toml"
    os.mkfifo(path)
    done = threading.Event()

    def release() -> None:
        for _ in range(30):
            if done.wait(1):
                return
            try:
                os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
            except OSError:
                continue  # no reader waiting

    guard = threading.Thread(target=release, daemon=True)
    guard.start()
    yield path
    done.set()
    guard.join()


def test_a_named_pipe_as_config_is_refused_before_it_is_opened(fifo: Path) -> None:
    assert _refusal(fifo) == f"--config {fifo}: is not a regular file (a named pipe)"


def test_a_link_to_a_device_as_config_is_refused(tmp_path: Path) -> None:
    link = tmp_path / "bench.json"
    link.symlink_to(os.devnull)
    assert _refusal(link) == f"--config {link}: is not a regular file (a character device)"


def test_a_folder_as_config_is_named_a_folder(tmp_path: Path) -> None:
    folder = tmp_path / "bench.toml"
    folder.mkdir()
    assert _refusal(folder) == f"--config {folder}: is a folder, not a config file"


def test_a_json_config_giving_a_key_twice_is_refused_naming_it(tmp_path: Path) -> None:
    path = _write(tmp_path, "bench.json", '{"max_seconds": 1, "max_seconds": 2}')
    assert _refusal(path) == (
        f"config file {path}: key 'max_seconds' given twice in one object; keep one"
    )


def test_a_json_config_giving_a_nested_key_twice_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "bench.json", '{"extra_body": {"top_k": 1, "top_k": 50}}')
    assert "key 'top_k' given twice" in _refusal(path)


def test_a_config_nested_past_what_the_parser_reads_is_one_error(tmp_path: Path) -> None:
    # It was an internal error (RecursionError), exit 3.
    path = _write(tmp_path, "deep.json", '{"extra_body": ' + "[" * 100_000 + "]" * 100_000 + "}")
    assert _refusal(path) == f"config file {path} is nested too deeply to read"


def test_the_spellings_are_the_flags_of_the_plural_keys() -> None:
    assert FLAG_SPELLINGS == {
        "header": "headers",
        "secret_header": "secret_headers",
        "data_column": "data_columns",
        "allowed_media_path": "allowed_media_paths",
        "validator": "validators",
        "mock_fault": "mock_faults",
    }
    for spelled, key in FLAG_SPELLINGS.items():
        assert flag_of(key) == "--" + spelled.replace("_", "-")


def test_a_key_written_as_its_flag_sets_what_the_plural_key_sets(tmp_path: Path) -> None:
    singular = """
        data = "rows.jsonl"
        header = { X-Team = "perf" }
        secret-header = "X-Token"
        data_column = { prompt = "question" }
        allowed_media_path = "/srv/images"
        validator = "mypkg.checks:x"
        mock_fault = { empty_stream = 0.5 }
    """
    plural = """
        data = "rows.jsonl"
        headers = { X-Team = "perf" }
        secret-headers = "X-Token"
        data_columns = { prompt = "question" }
        allowed_media_paths = ["/srv/images"]
        validators = ["mypkg.checks:x"]
        mock_faults = { empty_stream = 0.5 }
    """
    from_singular = load_config_file(_write(tmp_path, "one.toml", singular))
    from_plural = load_config_file(_write(tmp_path, "many.toml", plural))
    assert build_config(from_singular, {}) == build_config(from_plural, {})
    config = build_config(from_singular, {})
    assert config.target.headers == {"X-Team": "perf"}
    assert config.source.allowed_media_paths == (Path("/srv/images"),)


def test_a_key_given_as_its_flag_and_as_its_key_is_refused(tmp_path: Path) -> None:
    path = _write(tmp_path, "bench.toml", "mock_faults = { a = 1 }\nmock-fault = { a = 1 }\n")
    assert _refusal(path) == (
        f"config file {path}: mock_faults given twice (mock_faults and mock-fault)"
    )


def test_an_error_names_the_flag_spelling_as_the_file_wrote_it() -> None:
    with pytest.raises(ConfigError) as raised:
        build_config(tomllib.loads('header = "X-Team: perf"'), {})
    assert str(raised.value).startswith("header: Input should be a valid dictionary")


def test_an_unknown_key_lists_the_flag_spellings_too(tmp_path: Path) -> None:
    message = _refusal(_write(tmp_path, "bench.toml", "heder = 1\n"))
    assert "unknown key heder" in message
    assert "or a flag's own spelling: allowed_media_path, data_column, header" in message
