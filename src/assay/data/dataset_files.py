"""Rows from datasets: JSON arrays (ShareGPT and the like), parquet and arrow files, and Hugging
Face datasets (`hf:NAME_OR_PATH[:SPLIT]`).

Parquet, arrow and Hugging Face datasets need the optional `datasets` package (which brings
`pyarrow`): `pip install 'assay[datasets]'`. It is imported only when such data is asked for.
"""

from __future__ import annotations

import importlib
import os
import socket
from collections.abc import Mapping
from pathlib import Path
from typing import Any, Final
from urllib.parse import urlsplit

import orjson

from assay.errors import DataError

HF_PREFIX: Final = "hf:"
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
    dataset folder, or a hub name; SPLIT defaults to `train` (or the only split there is)."""
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
    try:
        if (local / "dataset_info.json").is_file() or (local / "dataset_dict.json").is_file():
            loaded = datasets.load_from_disk(str(local))
        else:
            loaded = datasets.load_dataset(name, split=split)
            return _numbered(loaded.to_list())
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
    if isinstance(loaded, datasets.DatasetDict):
        splits = sorted(loaded)
        chosen = split or ("train" if "train" in loaded or len(splits) != 1 else splits[0])
        if chosen not in loaded:
            raise DataError(f"{spec}: no split {chosen!r} (splits: {', '.join(splits)})")
        loaded = loaded[chosen]
    elif split is not None:
        raise DataError(f"{spec}: the dataset saved at {name} has no splits; drop ':{split}'")
    return _numbered(loaded.to_list())


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
    "hf_records",
    "is_hf_spec",
    "json_array_records",
    "parquet_records",
    "split_hf_spec",
]
