"""A data file's images: the `images` role in CSV and parquet rows, LLaVA's `image`, and the
refusals that name the row (an image for an endpoint without messages, images in a session)."""

from __future__ import annotations

import importlib
import random
from pathlib import Path

import orjson
import pytest

from assay.data import FileSource, FileSourceConfig
from assay.data.media import ImageSize, data_url, synthetic_image
from assay.data.session import FileSessions
from assay.errors import DataError


def _load(path: Path, **changes: object) -> FileSource:
    config: dict[str, object] = {"path": path, "model": "m", **changes}
    return FileSource.load(FileSourceConfig.model_validate(config))


def _png(path: Path, width: int = 28, height: int = 28) -> bytes:
    data = synthetic_image(ImageSize(width=width, height=height), "png", random.Random(2))
    path.write_bytes(data)
    return data


def _image_urls(source: FileSource, index: int) -> list[str]:
    messages = source.request(index).messages
    assert messages is not None
    content = messages[-1]["content"]
    assert isinstance(content, list)
    urls: list[str] = []
    for part in content:
        if isinstance(part, dict) and part.get("type") == "image_url":
            image = part["image_url"]
            assert isinstance(image, dict)
            url = image["url"]
            assert isinstance(url, str)
            urls.append(url)
    return urls


def test_a_csv_images_cell_is_one_path_or_a_json_list(tmp_path: Path) -> None:
    a = _png(tmp_path / "a.png")
    b = _png(tmp_path / "b.png", 56, 28)
    path = tmp_path / "rows.csv"
    path.write_text('prompt,images\nOne,a.png\nTwo,"[""a.png"", ""b.png""]"\nNone,\n')
    source = _load(path)
    assert _image_urls(source, 0) == [data_url(a, "image/png")]
    assert _image_urls(source, 1) == [data_url(a, "image/png"), data_url(b, "image/png")]
    assert source.request(2).messages == ({"role": "user", "content": "None"},)
    assert [source.request(i).images for i in range(3)] == [1, 2, 0]


def test_a_parquet_images_column_holds_lists(tmp_path: Path) -> None:
    pyarrow = pytest.importorskip("pyarrow")
    pq = importlib.import_module("pyarrow.parquet")  # no type information: imported by name
    _png(tmp_path / "a.png")
    path = tmp_path / "rows.parquet"
    rows = [{"q": "Look", "pics": ["a.png", "https://example.com/x.jpg"]}]
    pq.write_table(pyarrow.Table.from_pylist(rows), path)
    source = _load(path, columns={"prompt": "q", "images": "pics"})
    urls = _image_urls(source, 0)
    assert urls[0].startswith("data:image/png;base64,")
    assert urls[1] == "https://example.com/x.jpg"


def test_an_image_row_for_an_endpoint_without_messages_names_the_row(tmp_path: Path) -> None:
    _png(tmp_path / "a.png")
    path = tmp_path / "rows.jsonl"
    path.write_bytes(orjson.dumps({"prompt": "Look", "images": ["a.png"]}))
    with pytest.raises(DataError, match=r"rows.jsonl, line 1: the row has images.*completions"):
        _load(path, endpoint="completions")


def test_a_llava_row_cannot_run_as_a_session(tmp_path: Path) -> None:
    _png(tmp_path / "a.png")
    path = tmp_path / "llava.json"
    row = {"image": "a.png", "conversations": [{"from": "human", "value": "<image>\nHi"}]}
    path.write_bytes(orjson.dumps([row]))
    source = _load(path)
    assert len(_image_urls(source, 0)) == 1
    with pytest.raises(
        DataError, match=r"llava.json, line 1: a row with images cannot run as a multi-turn"
    ):
        FileSessions.of(source)
