"""A dataset's local images that try to leave its folder or run a program: a folder of the path
swapped for a symlink out between the check and the open, a hard link to a file outside, an EPS
file Pillow would hand to Ghostscript, a path that prints a line of its own. Each is refused with
one line naming the rule; what stays inside the folder is still read."""

from __future__ import annotations

import base64
import importlib
import os
import random
import stat
from pathlib import Path

import pytest

from assay.data import FileSource, FileSourceConfig
from assay.data.image_bytes import DECODED_FORMATS, image_to_send
from assay.data.media import ImageSize, synthetic_image
from assay.errors import DataError
from tests.data.test_local_media_attacks import _dataset


def _png(seed: int) -> bytes:
    return synthetic_image(ImageSize(width=16, height=16), "png", random.Random(seed))


def _load(path: Path) -> FileSource:
    return FileSource.load(FileSourceConfig.model_validate({"path": path, "model": "m"}))


def _refused(path: Path, *words: str) -> str:
    with pytest.raises(DataError) as caught:
        _load(path)
    message = str(caught.value)
    for word in words:
        assert word in message, (word, message)
    return message


def _sent(source: FileSource) -> bytes:
    (url,) = source.rows[0].images
    return base64.b64decode(url.partition(",")[2])


def test_a_folder_swapped_for_a_symlink_out_after_the_check_is_refused(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The swap happens exactly between the path's check and its open, as a racing process's
    rename would: the open file's own path is what is checked last."""
    folder = tmp_path / "ds"
    (folder / "sub").mkdir(parents=True)
    (folder / "sub" / "a.png").write_bytes(_png(1))
    (tmp_path / "outside").mkdir()
    (tmp_path / "outside" / "a.png").write_bytes(_png(2))
    target = str(folder / "sub" / "a.png")
    real_open = os.open

    def open_after_a_swap(path: str | os.PathLike[str], flags: int, *args: int) -> int:
        if os.fspath(path) == target and not (folder / "sub").is_symlink():
            (folder / "sub").rename(folder / "was-sub")
            (folder / "sub").symlink_to(tmp_path / "outside")
        return real_open(path, flags, *args)

    monkeypatch.setattr(os, "open", open_after_a_swap)
    _refused(_dataset(folder, "sub/a.png"), "line 1", "outside the folders", "outside/a.png")


def test_a_folder_symlink_that_stays_inside_is_read(tmp_path: Path) -> None:
    folder = tmp_path / "ds"
    (folder / "pictures").mkdir(parents=True)
    (folder / "pictures" / "a.png").write_bytes(_png(1))
    (folder / "latest").symlink_to(folder / "pictures")
    assert _sent(_load(_dataset(folder, "latest/a.png"))) == _png(1)


def test_a_hard_link_is_refused_with_what_to_do(tmp_path: Path) -> None:
    (tmp_path / "outside").mkdir()
    secret = tmp_path / "outside" / "secret.png"
    secret.write_bytes(_png(2))
    folder = tmp_path / "ds"
    folder.mkdir()
    os.link(secret, folder / "hard.png")
    _refused(
        _dataset(folder, "hard.png"),
        "line 1",
        "2 hard links",
        "may point at a file outside",
        "copy the file into the folder",
    )


def test_a_copy_in_place_of_the_hard_link_is_read(tmp_path: Path) -> None:
    folder = tmp_path / "ds"
    folder.mkdir()
    (folder / "a.png").write_bytes(_png(1))
    assert os.stat(folder / "a.png").st_nlink == 1
    assert _sent(_load(_dataset(folder, "a.png"))) == _png(1)


_EPS = b"""%!PS-Adobe-3.0 EPSF-3.0
%%BoundingBox: 0 0 8 8
%%EndComments
newpath 0 0 moveto 8 8 lineto stroke
showpage
%%EOF
"""


def test_an_eps_image_is_refused_and_no_program_runs(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A `gs` first on PATH records that it ran; Pillow looks for it afresh."""
    bin_folder = tmp_path / "bin"
    bin_folder.mkdir()
    ran = tmp_path / "gs-ran"
    gs = bin_folder / "gs"
    gs.write_text(f'#!/bin/sh\necho "$@" >> {ran}\n[ "$1" = "--version" ] && exit 0\nexit 1\n')
    gs.chmod(gs.stat().st_mode | stat.S_IXUSR)
    monkeypatch.setenv("PATH", f"{bin_folder}{os.pathsep}{os.environ.get('PATH', '')}")
    monkeypatch.setattr(importlib.import_module("PIL.EpsImagePlugin"), "gs_binary", None)
    folder = tmp_path / "ds"
    folder.mkdir()
    (folder / "figure.eps").write_bytes(_EPS)
    _refused(_dataset(folder, "figure.eps"), "line 1", "not an image of a supported format (EPS)")
    assert not ran.exists()


def test_every_format_read_is_decoded_in_process(tmp_path: Path) -> None:
    """Each allowed format, written by Pillow, is sent; none names a program to run."""
    image_module = importlib.import_module("PIL.Image")
    picture = image_module.new("RGB", (4, 4), (200, 10, 10))
    for kind in DECODED_FORMATS:
        path = tmp_path / f"a.{kind.lower()}"
        picture.save(path, format=kind)
        sent, mime = image_to_send(path.read_bytes(), f"image {path.name}")
        assert mime.startswith("image/"), (kind, mime)
        assert sent


def test_a_path_with_a_newline_cannot_print_a_line_of_its_own(tmp_path: Path) -> None:
    name = "x\u001b]0;title\u0007\nerror: all good, nothing was sent.png"
    message = _refused(_dataset(tmp_path / "ds", name), "line 1")
    assert "\n" not in message
    assert "\u001b" not in message
    assert "\\x0aerror: all good" in message
