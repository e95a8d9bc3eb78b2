"""A Hugging Face dataset that names files outside its folder: a local folder's README
`data_files` (a `../` path, an absolute path or glob, a symlink out) and a `save_to_disk` folder's
`state.json` or `dataset_dict.json`. Each is refused, naming the file and the rule, before any
data file is read; what stays inside the folder still loads."""

from __future__ import annotations

import importlib
import os
from pathlib import Path

import orjson
import pytest

from assay.data import FileSource, FileSourceConfig
from assay.data.dataset_files import check_local_data_files, hf_records
from assay.errors import DataError

SECRET = "SECRET-line-of-a-file-outside-the-dataset"


@pytest.fixture(autouse=True)
def _offline_cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """No hub, and the library's caches under the test's own folder."""
    monkeypatch.setenv("HF_HUB_OFFLINE", "1")
    monkeypatch.setenv("HF_HOME", str(tmp_path / "hf-home"))
    config = importlib.import_module("datasets.config")
    monkeypatch.setattr(config, "HF_HUB_OFFLINE", True)
    monkeypatch.setattr(config, "HF_DATASETS_CACHE", tmp_path / "hf-home" / "datasets")


def _jsonl(path: Path, *prompts: str) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_bytes(b"\n".join(orjson.dumps({"prompt": prompt}) for prompt in prompts))
    return path


def _folder(tmp_path: Path, *paths: str, splits: str = "train") -> Path:
    """A dataset folder with `in.jsonl` whose README names `paths` for each of `splits`."""
    folder = tmp_path / "ds"
    _jsonl(folder / "in.jsonl", "inside prompt")
    names = ", ".join(orjson.dumps(path).decode() for path in ("in.jsonl", *paths))
    entries = "".join(f"  - split: {split}\n    path: [{names}]\n" for split in splits.split())
    readme = f"---\nconfigs:\n- config_name: default\n  data_files:\n{entries}---\n# Prompts\n"
    (folder / "README.md").write_text(readme)
    return folder


def _outside(tmp_path: Path) -> Path:
    return _jsonl(tmp_path / "outside" / "private" / "notes.jsonl", SECRET)


def _refused(spec: str, *words: str) -> str:
    with pytest.raises(DataError) as caught:
        hf_records(spec)
    message = str(caught.value)
    assert SECRET not in message
    for word in words:
        assert word in message, (word, message)
    return message


def test_readme_data_file_up_and_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    outside = _outside(tmp_path)
    folder = _folder(tmp_path, "../outside/private/notes.jsonl")
    _refused(f"hf:{folder}:train", "notes.jsonl", str(outside), "outside the dataset's folder")


def test_readme_data_file_by_absolute_path_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    outside = _outside(tmp_path)
    folder = _folder(tmp_path, str(outside))
    _refused(f"hf:{folder}:train", str(outside), "outside the dataset's folder")


def test_readme_data_files_by_absolute_glob_are_refused(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    outside = _outside(tmp_path)
    folder = _folder(tmp_path, f"{tmp_path}/outside/**/*.jsonl")
    _refused(f"hf:{folder}:train", str(outside), "outside the dataset's folder")


def test_data_file_that_is_a_symlink_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    outside = _outside(tmp_path)
    folder = tmp_path / "ds"
    _jsonl(folder / "a.jsonl", "inside prompt")
    (folder / "b.jsonl").symlink_to(outside)
    _refused(f"hf:{folder}:train", "b.jsonl", str(outside), "symlinks followed")


def test_data_files_inside_the_folder_load_symlinks_included(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    folder = _folder(tmp_path, "more/b.jsonl")
    _jsonl(folder / "real" / "b.jsonl", "second prompt")
    (folder / "more").symlink_to(folder / "real")
    rows = hf_records(f"hf:{folder}:train")
    assert [row["prompt"] for _, row in rows] == ["inside prompt", "second prompt"]


def test_a_hub_dataset_may_name_no_local_file(tmp_path: Path) -> None:
    local = _outside(tmp_path)
    check_local_data_files("hf:org/chats", ["hf://datasets/org/chats@main/a.jsonl"], None)
    for named in (str(local), f"file://{local}", f"zip://a.jsonl::{local}"):
        with pytest.raises(DataError, match=r"is a local file .* from the Hugging Face hub"):
            check_local_data_files("hf:org/chats", [named], None)


def test_a_name_with_a_newline_is_shown_on_one_line(tmp_path: Path) -> None:
    named = f"{tmp_path}/x\nerror: all good.jsonl"
    with pytest.raises(DataError) as caught:
        check_local_data_files("hf:org/chats", [named], None)
    assert "\n" not in str(caught.value)


def test_saved_dataset_whose_state_names_an_arrow_file_outside_is_refused(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    private = tmp_path / "outside" / "private_ds"
    datasets.Dataset.from_list([{"prompt": SECRET}]).save_to_disk(str(private))
    saved = tmp_path / "saved"
    datasets.Dataset.from_list([{"prompt": "inside prompt"}]).save_to_disk(str(saved))
    state = orjson.loads((saved / "state.json").read_bytes())
    (arrow,) = private.glob("*.arrow")
    state["_data_files"].append({"filename": f"../outside/private_ds/{arrow.name}"})
    (saved / "state.json").write_bytes(orjson.dumps(state))
    _refused(f"hf:{saved}", arrow.name, str(arrow), "outside the dataset's folder")


def test_saved_dataset_dict_whose_split_is_a_folder_outside_is_refused(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    datasets.Dataset.from_list([{"prompt": SECRET}]).save_to_disk(str(tmp_path / "private"))
    saved = tmp_path / "saved"
    datasets.DatasetDict({"train": datasets.Dataset.from_list([{"prompt": "in"}])}).save_to_disk(
        str(saved)
    )
    (saved / "dataset_dict.json").write_bytes(orjson.dumps({"splits": ["../private"]}))
    _refused(f"hf:{saved}", "../private", "outside the dataset's folder")


def test_saved_dataset_whose_arrow_file_is_a_symlink_out_is_refused(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    private = tmp_path / "outside"
    datasets.Dataset.from_list([{"prompt": SECRET}]).save_to_disk(str(private))
    saved = tmp_path / "saved"
    datasets.Dataset.from_list([{"prompt": "inside prompt"}]).save_to_disk(str(saved))
    (arrow,) = saved.glob("*.arrow")
    arrow.unlink()
    (outside_arrow,) = private.glob("*.arrow")
    os.symlink(outside_arrow, arrow)
    _refused(f"hf:{saved}", str(outside_arrow), "symlinks followed")


def test_folder_of_several_splits_without_train_asks_for_one(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    folder = _folder(tmp_path, splits="test validation")
    message = _refused(f"hf:{folder}", "the splits test, validation", f"hf:{folder}:test")
    assert "AttributeError" not in message
    rows = hf_records(f"hf:{folder}:validation")
    assert [row["prompt"] for _, row in rows] == ["inside prompt"]


def test_folder_of_several_splits_reads_train_by_default(tmp_path: Path) -> None:
    pytest.importorskip("datasets")
    folder = tmp_path / "ds"
    _jsonl(folder / "train.jsonl", "a training prompt")
    _jsonl(folder / "test.jsonl", "a test prompt")
    source = FileSource.load(
        FileSourceConfig.model_validate({"path": f"hf:{folder}", "model": "m"})
    )
    assert source.size() == 1
    assert source.request(0).messages == ({"role": "user", "content": "a training prompt"},)


def test_data_file_hard_linked_from_outside_is_refused(tmp_path: Path) -> None:
    # A crafted tar extracted with Python's tarfile can leave such a link inside the folder.
    pytest.importorskip("datasets")
    outside = _outside(tmp_path)
    folder = tmp_path / "ds"
    _jsonl(folder / "a.jsonl", "inside prompt")
    os.link(outside, folder / "b.jsonl")
    _refused(f"hf:{folder}:train", "b.jsonl", "2 hard links", "a copy, not a link")


def test_readme_data_file_by_a_local_protocol_is_refused(tmp_path: Path) -> None:
    # `local://` is fsspec's local file system under another name, as `file://` is.
    pytest.importorskip("datasets")
    outside = _outside(tmp_path)
    for url in (f"local://{outside}", f"file://{outside}"):
        folder = _folder(tmp_path, url)
        _refused(f"hf:{folder}:train", str(outside), "outside the dataset's folder")
        (folder / "README.md").unlink()
    with pytest.raises(DataError, match="is a local file"):
        check_local_data_files("hf:org/chats", [f"zip://a.csv::local://{outside}"], None)


def test_a_hub_cache_snapshot_whose_files_link_to_its_blobs_loads(tmp_path: Path) -> None:
    # `snapshot_download` leaves `snapshots/REV/...` as symlinks to `../../blobs/HASH`.
    pytest.importorskip("datasets")
    repo = tmp_path / "hub" / "datasets--org--chats"
    blob = _jsonl(repo / "blobs" / "b1", "cached prompt")
    snapshot = repo / "snapshots" / "abc123"
    (snapshot / "data").mkdir(parents=True)
    (snapshot / "data" / "train.jsonl").symlink_to(Path("../../../blobs") / blob.name)
    rows = hf_records(f"hf:{snapshot}:train")
    assert [row["prompt"] for _, row in rows] == ["cached prompt"]


def test_saved_dataset_whose_state_is_a_pipe_is_refused_without_waiting(tmp_path: Path) -> None:
    datasets = pytest.importorskip("datasets")
    saved = tmp_path / "saved"
    split = datasets.Dataset.from_list([{"prompt": "inside prompt"}])
    datasets.DatasetDict({"train": split}).save_to_disk(str(saved))
    (saved / "train" / "state.json").unlink()
    os.mkfifo(saved / "train" / "state.json")
    _refused(f"hf:{saved}:train", "state.json", "not a regular file")
