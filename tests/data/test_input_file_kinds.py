"""Only regular files are read as data or traces: a device or a named pipe given as `--data` or
`--trace` is refused by name before it is opened, and again on the open file, never read without
end (`/dev/zero` ran into the out-of-memory killer) nor waited on (a FIFO hung the run). A folder
is named as a folder. A row that gives a key twice is refused instead of keeping one value."""

from __future__ import annotations

import os
import threading
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest

from assay.data import FileSource, FileSourceConfig, file_formats
from assay.data.file_formats import read_regular_file
from assay.data.trace import TraceConfig, load_trace
from assay.errors import DataError

ROW = b'{"prompt": "hi"}\n'
# The longest a regression may keep a FIFO's reader waiting before the guard lets it go.
RELEASE_ATTEMPTS = 30


def _load(path: Path, **fields: object) -> FileSource:
    return FileSource.load(FileSourceConfig.model_validate({"path": path, "model": "m", **fields}))


def _fails(path: Path, **fields: object) -> str:
    with pytest.raises(DataError) as raised:
        _load(path, **fields)
    return str(raised.value)


def _release_readers(path: Path, done: threading.Event) -> None:
    """Open the FIFO for writing and close it while a reader waits in `open`: a reader that
    regressed into waiting then reads an empty file and fails its test, rather than hanging."""
    for _ in range(RELEASE_ATTEMPTS):
        if done.wait(1):
            return
        try:
            os.close(os.open(path, os.O_WRONLY | os.O_NONBLOCK))
        except OSError:
            continue  # no reader waiting (ENXIO)


@pytest.fixture
def make_fifo(tmp_path: Path) -> Iterator[Callable[[str], Path]]:
    """Named pipes in `tmp_path`, each watched by `_release_readers` until the test ends."""
    done = threading.Event()
    guards: list[threading.Thread] = []

    def make(name: str) -> Path:
        path = tmp_path / name
        os.mkfifo(path)
        guard = threading.Thread(target=_release_readers, args=(path, done), daemon=True)
        guard.start()
        guards.append(guard)
        return path

    yield make
    done.set()
    for guard in guards:
        guard.join()


@pytest.fixture
def fifo(make_fifo: Callable[[str], Path]) -> Path:
    return make_fifo("pipe.jsonl")


def test_a_named_pipe_as_data_is_refused_without_waiting_for_a_writer(fifo: Path) -> None:
    assert _fails(fifo) == f"--data {fifo}: is not a regular file (a named pipe)"


def test_a_link_to_a_device_as_data_is_refused_before_it_is_read(tmp_path: Path) -> None:
    # /dev/zero was read until memory ran out; /dev/null shows the same check, harmlessly.
    link = tmp_path / "zero.jsonl"
    link.symlink_to(os.devnull)
    assert _fails(link) == f"--data {link}: is not a regular file (a character device)"


def test_a_link_to_a_regular_file_is_followed(tmp_path: Path) -> None:
    (tmp_path / "rows.jsonl").write_bytes(ROW)
    link = tmp_path / "link.jsonl"
    link.symlink_to(tmp_path / "rows.jsonl")
    assert _load(link).size() == 1


@pytest.mark.parametrize("name", ["rows.parquet", "rows.arrow", "rows.csv", "rows.json"])
def test_a_named_pipe_is_refused_in_every_file_format(
    make_fifo: Callable[[str], Path], name: str
) -> None:
    path = make_fifo(name)
    assert "is not a regular file (a named pipe)" in _fails(path)


def test_a_file_swapped_for_a_pipe_after_its_check_is_refused_on_the_open_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(ROW)
    real_open = os.open

    def swap_then_open(target: str | Path, flags: int, mode: int = 0o777) -> int:
        if Path(target) == path and not path.is_fifo():
            # Between the check of the path and its open, the file becomes a FIFO.
            swapped = tmp_path / "swapped"
            os.mkfifo(swapped)
            os.replace(swapped, path)
        return real_open(target, flags, mode)

    monkeypatch.setattr(os, "open", swap_then_open)
    assert _fails(path) == f"--data {path}: is not a regular file (a named pipe)"


def test_a_named_pipe_as_trace_is_refused(fifo: Path) -> None:
    with pytest.raises(DataError) as raised:
        load_trace(TraceConfig(path=fifo, model="m"))
    assert str(raised.value) == f"--trace {fifo}: is not a regular file (a named pipe)"


def test_a_folder_as_data_is_named_a_folder_with_the_dataset_spelling(tmp_path: Path) -> None:
    folder = tmp_path / "prompts"
    folder.mkdir()
    message = _fails(folder)
    assert message.startswith(f"--data {folder}: is a folder, not a data file")
    assert f"--data hf:{folder}" in message
    assert "unknown prompt file type" not in message


def test_a_folder_named_like_a_data_file_is_named_a_folder(tmp_path: Path) -> None:
    folder = tmp_path / "prompts.jsonl"
    folder.mkdir()
    assert "is a folder, not a data file" in _fails(folder)
    assert _fails(folder, format="jsonl") == f"--data {folder}: is a folder, not a prompt file"


def test_a_jsonl_row_giving_a_key_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(ROW + b'{"prompt": "a", "max_tokens": 1, "max_tokens": 5000}\n')
    assert _fails(path) == f"{path}, line 2: key 'max_tokens' given twice in one object; keep one"


def test_a_message_giving_a_key_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "rows.jsonl"
    path.write_bytes(b'{"messages": [{"role": "user", "content": "a", "content": "b"}]}\n')
    assert "line 1: key 'content' given twice" in _fails(path, endpoint="chat")


def test_a_json_array_item_giving_a_key_twice_is_refused_naming_the_item(
    tmp_path: Path,
) -> None:
    path = tmp_path / "rows.json"
    path.write_bytes(b' [ {"prompt": "a"} ,\n{"prompt": "b", "prompt": "c"}]')
    assert _fails(path) == f"{path}, item 2: key 'prompt' given twice in one object; keep one"


def test_a_json_array_without_repeated_keys_loads(tmp_path: Path) -> None:
    path = tmp_path / "rows.json"
    path.write_bytes(b'[{"prompt": "a", "n": {"x": [1, {"y": 2}]}}, {"prompt": "b"}]')
    assert _load(path).size() == 2


def test_a_csv_header_giving_a_column_twice_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "rows.csv"
    path.write_bytes(b"prompt,prompt\na,b\n")
    assert _fails(path) == (f"{path}, line 1: column 'prompt' given twice in the header; keep one")


def test_a_csv_header_with_trailing_unnamed_columns_loads(tmp_path: Path) -> None:
    # A spreadsheet's export often ends each line with empty columns.
    path = tmp_path / "rows.csv"
    path.write_bytes(b"prompt,,\na,,\nb,,\n")
    assert _load(path).size() == 2


def test_an_item_nested_too_deeply_to_check_is_refused_not_passed(tmp_path: Path) -> None:
    # orjson reads 1,000 levels; Python's parser, which finds repeated keys, cannot: the item
    # is refused, and the items after it are not left unchecked.
    deep = "[" * 1000 + "]" * 1000
    path = tmp_path / "rows.json"
    path.write_text(f'[{{"prompt": "a", "n": {deep}}}, {{"prompt": "a", "prompt": "b"}}]')
    assert _fails(path) == (
        f"{path}, item 1: nested too deeply to check for a key given twice; flatten it"
    )


PROC_FILE = Path("/proc/self/status")  # a regular file whose size reads as 0


@pytest.mark.skipif(not PROC_FILE.is_file(), reason="needs Linux's /proc")
def test_a_regular_file_whose_size_says_nothing_is_read_whole() -> None:
    data = read_regular_file(PROC_FILE, "--data", "prompt file")
    assert os.stat(PROC_FILE).st_size == 0
    assert b"Name:" in data


@pytest.mark.skipif(not PROC_FILE.is_file(), reason="needs Linux's /proc")
def test_a_file_holding_more_than_its_size_is_read_only_up_to_the_limit(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(file_formats, "MAX_DATA_FILE_BYTES", 16)
    with pytest.raises(DataError, match="grew above the 16 bytes assay reads"):
        read_regular_file(PROC_FILE, "--data", "prompt file")
