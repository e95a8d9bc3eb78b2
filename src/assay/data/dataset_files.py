"""Rows from datasets: JSON arrays (ShareGPT and the like), parquet and arrow files, and Hugging
Face datasets (`hf:NAME_OR_PATH[:SPLIT]`).

Parquet, arrow and Hugging Face datasets need the optional `datasets` package (which brings
`pyarrow`): `pip install 'assay[datasets]'`. It is imported only when such data is asked for.
"""

from __future__ import annotations

import importlib
import os
import socket
import stat
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import orjson

from assay.errors import DataError
from assay.printable import printable

HF_PREFIX: Final = "hf:"
# A saved dataset's `state.json` or `dataset_dict.json` lists file names: far below this.
_MAX_SAVED_JSON_BYTES: Final = 64 * 1024 * 1024
_INSTALL: Final = (
    "pip install -e \".[datasets]\" in a checkout of assay (or pip install 'assay[datasets]')"
)


def is_hf_spec(data: str | Path) -> bool:
    """Whether a `--data` value names a Hugging Face dataset (`hf:NAME[:SPLIT]`).

    >>> is_hf_spec("hf:org/chats:test"), is_hf_spec("prompts.jsonl")
    (True, False)
    """
    return str(data).startswith(HF_PREFIX)


def split_hf_spec(spec: str) -> tuple[str, str | None]:
    """`hf:NAME_OR_PATH[:SPLIT]` -> (name or path, split or None).

    >>> split_hf_spec("hf:org/chats:test"), split_hf_spec("hf:/data/saved")
    (('org/chats', 'test'), ('/data/saved', None))
    """
    rest = spec.removeprefix(HF_PREFIX)
    name, sep, split = rest.rpartition(":")
    if sep and name and split and "/" not in split:
        return name, split
    return rest, None


def json_array_records(text: str, path: Path) -> list[tuple[int, Mapping[str, object]]]:
    """The objects of a JSON array file (ShareGPT dumps are one), numbered from 1 as items."""
    try:
        value = orjson.loads(text)
    except orjson.JSONDecodeError as error:
        raise DataError(f"{path}: not valid JSON: {error}") from None
    if not isinstance(value, list):
        raise DataError(
            f"{path}: a .json data file must hold a list of objects (ShareGPT or prompt rows); "
            "use .jsonl for one object per line"
        )
    records: list[tuple[int, Mapping[str, object]]] = []
    for item, row in enumerate(value, start=1):
        if not isinstance(row, dict):
            raise DataError(f"{path}, item {item}: expected a JSON object")
        records.append((item, row))
    return records


def parquet_records(path: Path) -> list[tuple[int, Mapping[str, object]]]:
    """The rows of a parquet file, numbered from 1."""
    _datasets()  # the extra that brings pyarrow
    pq = importlib.import_module("pyarrow.parquet")
    try:
        table = pq.read_table(path)
    except (OSError, ValueError) as error:
        raise DataError(f"{path}: cannot read the parquet file: {error}") from None
    return _numbered(table.to_pylist())


def arrow_records(path: Path) -> list[tuple[int, Mapping[str, object]]]:
    """The rows of an arrow file (as `datasets` writes them, e.g. inside `save_to_disk`)."""
    datasets = _datasets()
    try:
        dataset = datasets.Dataset.from_file(str(path), in_memory=True)
    except (OSError, ValueError) as error:
        raise DataError(f"{path}: cannot read the arrow file: {error}") from None
    return _numbered(dataset.to_list())


def hf_records(spec: str) -> list[tuple[int, Mapping[str, object]]]:
    """The rows of a Hugging Face dataset: a directory written by `save_to_disk`, a local
    dataset folder, or a hub name; SPLIT defaults to `train` (or the only split there is).

    A dataset is input from elsewhere, and its own files say which files it is made of (a
    folder's README `data_files`, a saved dataset's `state.json`): every local file they name is
    checked to lie inside the dataset's folder, symlinks followed, before any is read, so a
    dataset cannot make assay send the user's files as prompts. One from the hub reads none."""
    name, split = split_hf_spec(spec)
    if not name:
        raise DataError(f"{spec}: no dataset name or path after 'hf:'")
    local = Path(name)
    # A hub name is `name` or `org/name`; anything else is a path, loaded without the hub.
    hub_name = not (local.exists() or local.is_absolute() or name.startswith(".")) and (
        name.count("/") <= 1
    )
    hub_problem = _hub_unreachable() if hub_name else None
    if hub_problem is not None:
        # Offline: the cache only, at once, instead of half a minute of retries on the hub.
        os.environ["HF_HUB_OFFLINE"] = "1"
    datasets = _datasets()
    saved = (local / "dataset_info.json").is_file() or (local / "dataset_dict.json").is_file()
    try:
        if saved:
            loaded = _saved_split(datasets, spec, local, split)
        else:
            loaded = _built_split(datasets, spec, name, split, local if local.is_dir() else None)
    except DataError:
        raise
    # The library raises many kinds for a name, path or split it cannot load (missing files,
    # no network, unknown split); each becomes one line for the user.
    except Exception as error:
        if hub_problem is not None:
            raise DataError(
                f"{spec}: no Hugging Face hub reachable ({hub_problem}) and the dataset is not "
                "in the local cache; give a local path, or load it once with the hub reachable"
            ) from None
        raise DataError(
            f"{spec}: cannot load the dataset: {type(error).__name__}: {error}"
        ) from None
    return _numbered(loaded.to_list())


def check_local_data_files(spec: str, files: Iterable[str], folder: Path | None) -> None:
    """Refuse, naming the file and the rule, any local file in `files` (paths or fsspec URLs, as
    a builder's `data_files` hold them) whose real path is outside `folder`; with no folder (a
    dataset from the hub) every local file is refused. Remote URLs pass: the library fetches
    them.

    >>> check_local_data_files("hf:org/chats", ["hf://datasets/org/chats/a.csv"], None)
    >>> check_local_data_files("hf:org/chats", ["/etc/hostname"], None)
    Traceback (most recent call last):
    ...
    assay.errors.DataError: hf:org/chats: data file /etc/hostname is a local file ...
    """
    root = None if folder is None else Path(os.path.realpath(folder))
    roots = () if root is None else (root, *_snapshot_blobs(root))
    for file in files:
        for part in _local_parts(file):
            real = Path(os.path.realpath(part))
            shown = printable(file if len(file) <= 200 else f"{file[:200]}…")
            if root is not None and any(real.is_relative_to(inside) for inside in roots):
                links = _hard_links(real)
                if links > 1:
                    raise DataError(
                        f"{spec}: data file {shown} has {links} hard links, and a hard link may "
                        "name a file outside the dataset's folder, so it is not read; copy the "
                        "file into the folder (a copy, not a link)"
                    )
                continue
            if root is None:
                raise DataError(
                    f"{spec}: data file {shown} is a local file ({printable(str(real))}): a "
                    "dataset from the Hugging Face hub is read from the hub, never from this "
                    "machine's files"
                )
            raise DataError(
                f"{spec}: data file {shown} is {printable(str(real))}, outside the dataset's "
                f"folder {printable(str(root))}: a local dataset's files are read only from "
                "inside its own folder (symlinks followed); copy the file into the folder"
            )


def _snapshot_blobs(root: Path) -> tuple[Path, ...]:
    """The blobs folder of a Hugging Face cache snapshot at `root`
    (`datasets--org--name/snapshots/REV`, whose files are symlinks to `../../blobs/HASH`): a
    snapshot's files live there, inside the same repository's folder of the cache."""
    blobs = root.parent.parent / "blobs"
    return (blobs,) if root.parent.name == "snapshots" and blobs.is_dir() else ()


def _hard_links(path: Path) -> int:
    """How many hard links the regular file at `path` has (0 for anything else, or nothing)."""
    try:
        status = os.stat(path)
    except OSError:
        return 0  # what is not there is not read either; the library says so
    return status.st_nlink if stat.S_ISREG(status.st_mode) else 0


def _local_parts(url: str) -> list[str]:
    """The local paths in a data file's name: a plain path, or any part of it (a chained URL's
    too: `zip://inner.csv::/data/archive.zip` reads the local archive) whose protocol fsspec
    serves from this machine's disk (`file://`, `local://`, any other name of its local file
    system), decided by fsspec's own registry rather than by a list of names.

    >>> _local_parts("zip://inner.csv::local:///data/a.zip"), _local_parts("hf://datasets/o/d")
    (['/data/a.zip'], [])
    """
    # fsspec, the library `datasets` reads every data file through (untyped: imported as Any).
    fsspec: Any = importlib.import_module("fsspec")
    local_system = importlib.import_module("fsspec.implementations.local").LocalFileSystem
    parts = []
    for part in url.split("::"):
        protocol, path = fsspec.core.split_protocol(part)
        try:
            local = protocol is None or issubclass(
                fsspec.get_filesystem_class(protocol), local_system
            )
        except (ImportError, ValueError):
            local = False  # a protocol fsspec cannot serve reads nothing
        if local:
            parts.append(path)
    return parts


def _data_file_names(data_files: object) -> list[str]:
    """Every file name in a builder config's `data_files` (a mapping of split to list of
    names, a list, a name, or None)."""
    match data_files:
        case None:
            return []
        case str():
            return [data_files]
        case Mapping():
            return [name for value in data_files.values() for name in _data_file_names(value)]
        case Iterable():
            return [name for value in data_files for name in _data_file_names(value)]
        case _:
            return [str(data_files)]


def _built_split(
    datasets: Any, spec: str, name: str, split: str | None, folder: Path | None
) -> Any:
    """One split of a dataset folder or hub dataset, built from exactly the data files its
    builder names, once each is checked (`check_local_data_files`)."""
    builder = datasets.load_dataset_builder(name)
    check_local_data_files(spec, _data_file_names(builder.config.data_files), folder)
    builder.download_and_prepare()
    loaded = builder.as_dataset()
    return loaded[_chosen_split(spec, sorted(loaded), split)]


def _saved_split(datasets: Any, spec: str, folder: Path, split: str | None) -> Any:
    """One split of a folder written by `save_to_disk`, its arrow files checked first: its
    `state.json` (and a saved dictionary's `dataset_dict.json`) name them, and could name
    files outside the folder."""
    if (folder / "dataset_info.json").is_file() and (folder / "state.json").is_file():
        if split is not None:
            raise DataError(f"{spec}: the dataset saved at {folder} has no splits; drop ':{split}'")
        return _checked_saved_dataset(datasets, spec, folder, folder)
    splits = _json_strings(spec, folder / "dataset_dict.json", "splits", folder)
    chosen = _chosen_split(spec, sorted(splits), split)
    return _checked_saved_dataset(datasets, spec, folder, folder / chosen)


def _checked_saved_dataset(datasets: Any, spec: str, folder: Path, saved: Path) -> Any:
    """The dataset saved at `saved` (the folder, or one split's folder inside it), once it and
    every arrow file its `state.json` names are found inside `folder`."""
    check_local_data_files(spec, [str(saved)], folder)
    names = _json_strings(spec, saved / "state.json", "_data_files", folder)
    check_local_data_files(spec, [str(saved / name) for name in names], folder)
    return datasets.Dataset.load_from_disk(str(saved))


def _json_strings(spec: str, path: Path, key: str, folder: Path) -> list[str]:
    """The names a saved dataset's JSON file lists under `key` (`_data_files` holds objects
    with a `filename`), the file read as its data files are: inside `folder`, one regular file
    (opened without waiting on a pipe), at most `_MAX_SAVED_JSON_BYTES`."""
    check_local_data_files(spec, [str(path)], folder)
    try:
        descriptor = os.open(path, os.O_RDONLY | os.O_NONBLOCK | getattr(os, "O_CLOEXEC", 0))
        with os.fdopen(descriptor, "rb") as handle:
            if not stat.S_ISREG(os.fstat(descriptor).st_mode):
                raise DataError(f"{spec}: {path.name} is not a regular file")
            data = handle.read(_MAX_SAVED_JSON_BYTES + 1)
        if len(data) > _MAX_SAVED_JSON_BYTES:
            raise DataError(f"{spec}: {path.name} is above {_MAX_SAVED_JSON_BYTES:,} bytes")
        value = orjson.loads(data)
    except (OSError, orjson.JSONDecodeError) as error:
        raise DataError(f"{spec}: cannot read {path.name}: {error}") from None
    items = value.get(key) if isinstance(value, dict) else None
    if not isinstance(items, list):
        raise DataError(f"{spec}: {path.name} does not list its {key}")
    names = [item.get("filename") if isinstance(item, dict) else item for item in items]
    strings = [name for name in names if isinstance(name, str)]
    if len(strings) != len(names):
        raise DataError(f"{spec}: {path.name} lists its {key} with a name that is not a string")
    return strings


def _chosen_split(spec: str, splits: list[str], split: str | None) -> str:
    """SPLIT if the dataset has it; with none asked, `train`, or the only split there is."""
    if split is None:
        if "train" in splits or not splits:
            split = "train"
        elif len(splits) == 1:
            return splits[0]
        else:
            raise DataError(
                f"{spec}: the dataset has the splits {', '.join(splits)} and none is named "
                f"train; pick one by adding it after a colon, e.g. {spec}:{splits[0]}"
            )
    if split not in splits:
        raise DataError(f"{spec}: no split {split!r} (splits: {', '.join(splits) or 'none'})")
    return split


HUB_TIMEOUT_S: Final = 3.0


def _hub_unreachable() -> str | None:
    """Why the hub cannot be reached (a TCP connection to `HF_ENDPOINT`, else the public hub,
    within `HUB_TIMEOUT_S`), or None when it can or offline mode is already asked for."""
    if os.environ.get("HF_HUB_OFFLINE", "").strip() not in ("", "0"):
        return None
    endpoint = os.environ.get("HF_ENDPOINT") or "https://huggingface.co"
    parts = urlsplit(endpoint)
    host = parts.hostname or "huggingface.co"
    port = parts.port or (443 if parts.scheme == "https" else 80)
    try:
        with socket.create_connection((host, port), timeout=HUB_TIMEOUT_S):
            return None
    except OSError as error:
        return f"{host}:{port}: {error.strerror or error}"


def _numbered(rows: list[dict[str, Any]]) -> list[tuple[int, Mapping[str, object]]]:
    return list(enumerate(rows, start=1))


def _datasets() -> Any:
    """The `datasets` module, or a `DataError` saying how to install it."""
    try:
        # Imported by name: neither `datasets` nor `pyarrow` ships type information.
        return importlib.import_module("datasets")
    except ImportError:
        raise DataError(
            f"reading parquet, arrow or Hugging Face datasets needs the optional `datasets` "
            f"package: {_INSTALL}"
        ) from None


__all__ = [
    "HF_PREFIX",
    "arrow_records",
    "check_local_data_files",
    "hf_records",
    "is_hf_spec",
    "json_array_records",
    "parquet_records",
    "split_hf_spec",
]
