"""A dataset that tries to send the user's own files (issue 37, item 1): paths out of its folder,
symlinks out, devices, pipes, huge files and images with bytes hidden after their end marker.
Each is refused naming the row and the rule, or sent without the hidden bytes, in well under a
second."""

from __future__ import annotations

import base64
import io
import os
import random
import time
from pathlib import Path

import orjson
import pytest
from PIL import Image

from assay.data import FileSource, FileSourceConfig
from assay.data.image_bytes import jpeg_end, png_end, riff_end
from assay.data.media import ImageSize, synthetic_image
from assay.errors import DataError
from assay.spec.limits import MAX_IMAGE_FILE_BYTES, MAX_IMAGES_PER_REQUEST

CANARY = b"CANARY-private-bytes-after-the-image"


def _png(width: int = 16, height: int = 16) -> bytes:
    return synthetic_image(ImageSize(width=width, height=height), "png", random.Random(3))


def _dataset(folder: Path, *images: object) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / "rows.jsonl"
    rows = [{"prompt": f"row {i}", "images": [image]} for i, image in enumerate(images)]
    path.write_bytes(b"\n".join(orjson.dumps(row) for row in rows))
    return path


def _load(path: Path, **changes: object) -> FileSource:
    config: dict[str, object] = {"path": path, "model": "m", **changes}
    return FileSource.load(FileSourceConfig.model_validate(config))


def _refused(path: Path, *words: str, **changes: object) -> str:
    started = time.monotonic()
    with pytest.raises(DataError) as caught:
        _load(path, **changes)
    assert time.monotonic() - started < 1.0
    message = str(caught.value)
    for word in words:
        assert word in message, (word, message)
    return message


def _sent_bytes(source: FileSource, index: int = 0) -> bytes:
    (url,) = source.rows[index].images
    header, _, payload = url.partition(",")
    assert header.startswith("data:image/"), header
    assert header.endswith(";base64"), header
    return base64.b64decode(payload)


def test_a_relative_path_out_of_the_datasets_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "private").mkdir()
    (tmp_path / "private" / "secret.png").write_bytes(_png())
    path = _dataset(tmp_path / "data", "../private/secret.png")
    _refused(path, "rows.jsonl, line 1: images[0]", "outside the folders", "--allowed-media-path")


def test_an_absolute_path_out_of_the_datasets_folder_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.png"
    secret.write_bytes(_png())
    path = _dataset(tmp_path / "data", str(secret))
    _refused(path, "line 1", "outside the folders")


def test_a_llava_image_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    (tmp_path / "secret.png").write_bytes(_png())
    folder = tmp_path / "data"
    folder.mkdir()
    row = {"image": "../secret.png", "conversations": [{"from": "human", "value": "<image>\nHi"}]}
    path = folder / "llava.json"
    path.write_bytes(orjson.dumps([row]))
    _refused(path, "llava.json, item 1: image", "outside the folders")


def test_a_symlink_out_of_the_folder_is_refused(tmp_path: Path) -> None:
    secret = tmp_path / "secret.png"
    secret.write_bytes(_png())
    folder = tmp_path / "data"
    folder.mkdir()
    (folder / "innocent.png").symlink_to(secret)
    _refused(_dataset(folder, "innocent.png"), "line 1", "outside the folders", str(secret))


def test_a_symlink_inside_the_folder_is_read(tmp_path: Path) -> None:
    folder = tmp_path / "data"
    (folder / "pics").mkdir(parents=True)
    (folder / "pics" / "a.png").write_bytes(_png())
    (folder / "link.png").symlink_to(folder / "pics" / "a.png")
    assert _sent_bytes(_load(_dataset(folder, "link.png"))) == _png()


def test_an_allowed_media_path_lets_another_folder_be_read(tmp_path: Path) -> None:
    (tmp_path / "shared").mkdir()
    (tmp_path / "shared" / "a.png").write_bytes(_png())
    path = _dataset(tmp_path / "data", "../shared/a.png")
    _refused(path, "outside the folders")
    source = _load(path, allowed_media_paths=[tmp_path / "shared"])
    assert _sent_bytes(source) == _png()


def test_dev_zero_is_refused_before_it_is_read(tmp_path: Path) -> None:
    _refused(
        _dataset(tmp_path, "/dev/zero"),
        "line 1",
        "not a regular file",
        allowed_media_paths=[Path("/dev")],
    )


def test_a_named_pipe_is_refused_without_blocking(tmp_path: Path) -> None:
    os.mkfifo(tmp_path / "pipe.png")
    _refused(_dataset(tmp_path, "pipe.png"), "line 1", "not a regular file")


def test_a_file_above_the_size_limit_is_refused_before_it_is_read(tmp_path: Path) -> None:
    big = tmp_path / "big.png"
    with big.open("wb") as file:
        file.truncate(MAX_IMAGE_FILE_BYTES + 1)  # sparse: no disk, no memory
    _refused(_dataset(tmp_path, "big.png"), "line 1", f"{MAX_IMAGE_FILE_BYTES:,} bytes")


def test_a_png_with_a_trailing_secret_is_sent_without_it(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(_png() + CANARY)
    sent = _sent_bytes(_load(_dataset(tmp_path, "a.png")))
    assert sent == _png()
    assert CANARY not in sent


def test_a_jpeg_with_a_thumbnail_and_a_trailing_secret_is_cut_at_its_own_end(
    tmp_path: Path,
) -> None:
    image = Image.frombytes("RGB", (64, 48), random.Random(4).randbytes(64 * 48 * 3))
    thumbnail = io.BytesIO()
    image.resize((8, 6)).save(thumbnail, format="JPEG")
    # An APP1 segment holding a whole JPEG (as an EXIF thumbnail does), with its own end marker.
    out = io.BytesIO()
    image.save(out, format="JPEG", progressive=True, restart_marker_blocks=1)
    plain = out.getvalue()
    segment = b"Exif\x00\x00" + thumbnail.getvalue()
    jpeg = plain[:2] + b"\xff\xe1" + (len(segment) + 2).to_bytes(2, "big") + segment + plain[2:]
    assert jpeg_end(jpeg) == len(jpeg)
    (tmp_path / "a.jpg").write_bytes(jpeg + CANARY)
    sent = _sent_bytes(_load(_dataset(tmp_path, "a.jpg")))
    assert sent == jpeg
    assert CANARY not in sent


def test_another_format_is_sent_decoded_and_reencoded(tmp_path: Path) -> None:
    image = Image.frombytes("RGB", (8, 8), random.Random(5).randbytes(8 * 8 * 3))
    out = io.BytesIO()
    image.save(out, format="GIF")
    (tmp_path / "a.gif").write_bytes(out.getvalue() + CANARY)
    source = _load(_dataset(tmp_path, "a.gif"))
    assert source.rows[0].images[0].startswith("data:image/png;base64,")
    sent = _sent_bytes(source)
    assert CANARY not in sent
    assert png_end(sent) == len(sent)
    assert Image.open(io.BytesIO(sent)).size == (8, 8)


def test_rows_naming_one_file_share_one_copy_of_it(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(_png(256, 256))
    (tmp_path / "pics").mkdir()
    source = _load(_dataset(tmp_path, *(["a.png", "pics/../a.png", str(tmp_path / "a.png")] * 70)))
    first = source.rows[0].images[0]
    assert all(row.images[0] is first for row in source.rows)


def test_a_row_with_too_many_images_is_refused(tmp_path: Path) -> None:
    (tmp_path / "a.png").write_bytes(_png())
    path = tmp_path / "rows.jsonl"
    path.write_bytes(
        orjson.dumps({"prompt": "p", "images": ["a.png"] * (MAX_IMAGES_PER_REQUEST + 1)})
    )
    _refused(path, "line 1", f"more than {MAX_IMAGES_PER_REQUEST} images")


@pytest.mark.parametrize(
    "text",
    [
        "\uff15\uff11\uff12x\uff15\uff11\uff12",  # full-width 512x512
        "512x\u0665\u0661\u0662",  # Arabic-Indic digits
        "\u00b2x2",  # a superscript two
        "512x512x1",
    ],
)
def test_an_image_size_takes_ascii_digits_only(text: str) -> None:
    with pytest.raises(ValueError, match="expected WxH"):
        ImageSize.parse(text)


def test_a_path_with_a_nul_byte_or_of_any_length_is_refused_by_name(tmp_path: Path) -> None:
    _refused(_dataset(tmp_path, "a\x00.png"), "line 1", "null byte")
    message = _refused(_dataset(tmp_path, "a" * 5000 + ".png"), "line 1")
    assert len(message) < 600


def test_a_multi_picture_jpeg_is_sent_as_its_first_picture_alone(tmp_path: Path) -> None:
    first, second = (
        Image.frombytes("RGB", (32, 24), random.Random(seed).randbytes(32 * 24 * 3))
        for seed in (1, 2)
    )
    out = io.BytesIO()
    first.save(out, format="MPO", save_all=True, append_images=[second])
    (tmp_path / "a.jpg").write_bytes(out.getvalue() + CANARY)
    source = _load(_dataset(tmp_path, "a.jpg"))
    assert source.rows[0].images[0].startswith("data:image/jpeg;base64,")
    sent = _sent_bytes(source)
    assert CANARY not in sent
    assert jpeg_end(sent) == len(sent) < len(out.getvalue())
    assert Image.open(io.BytesIO(sent)).size == (32, 24)


def test_an_image_whose_structure_names_no_end_is_refused(tmp_path: Path) -> None:
    png = _png()
    assert png_end(png) == len(png)
    assert png_end(png[:-12]) is None  # IEND cut off
    assert jpeg_end(b"\xff\xd8\xff\xda\x00\x02" + b"\x00" * 64) is None  # a scan never ended
    assert riff_end(b"RIFF" + (100).to_bytes(4, "little") + b"WEBP") is None
    webp = io.BytesIO()
    Image.new("RGB", (8, 8)).save(webp, format="WEBP")
    assert riff_end(webp.getvalue() + CANARY) == len(webp.getvalue())
    # Pillow still decodes a PNG whose IEND chunk is missing; assay does not guess its end.
    (tmp_path / "cut.png").write_bytes(png[:-12] + CANARY)
    _refused(_dataset(tmp_path, "cut.png"), "line 1")


def test_a_decompression_bomb_is_refused_without_being_decoded(tmp_path: Path) -> None:
    out = io.BytesIO()
    Image.new("1", (10_000, 9_000)).save(out, format="PNG")  # 90 M pixels in a few kB
    (tmp_path / "bomb.png").write_bytes(out.getvalue())
    _refused(_dataset(tmp_path, "bomb.png"), "line 1", "too large to decode safely")
