"""The samples of a plain metrics page, read without `prometheus_client`.

The Prometheus package is slow to import (it brings `http.server` and `urllib` with it), and the
pages servers and exporters write use a small part of the text format: `# HELP` / `# TYPE`
lines, samples `name{label="value",...} value [timestamp]` with single spaces, printable ASCII.
`plain_samples` reads such a page and gives up (None) at the first line outside that part; the
caller then reads the whole page with `prometheus_client`'s parser, so a page reads the same
either way (a differential property test holds the two to one answer).
"""

from __future__ import annotations

import re
from typing import Final

_NAME: Final = r"[a-zA-Z_:][a-zA-Z0-9_:]*"
_LABEL: Final = r'[a-zA-Z_][a-zA-Z0-9_]*="[^"\\]*"'
_SAMPLE: Final = re.compile(
    rf"({_NAME})(?:\{{((?:{_LABEL})(?:,{_LABEL})*,?)?\}})? ([^ ]+)(?: -?[0-9]+)?"
)
_LABEL_NAMES: Final = re.compile(r'([a-zA-Z_][a-zA-Z0-9_]*)="[^"]*"')
_METRIC_NAME: Final = re.compile(_NAME)
_VALUE: Final = re.compile(
    r"[+-]?(?:[0-9]+(?:\.[0-9]*)?(?:[eE][+-]?[0-9]+)?|\.[0-9]+(?:[eE][+-]?[0-9]+)?|Inf|NaN)"
)
# Anything but printable ASCII, a tab or a line feed: the full parser reads it.
_NOT_PLAIN: Final = re.compile(r"[^\x20-\x7e\t\n]")
# The sample names of a family of each type (the family's name + each suffix).
_SUFFIXES: Final = {
    "counter": ("",),
    "gauge": ("",),
    "untyped": ("",),
    "unknown": ("",),
    "summary": ("_count", "_sum", ""),
    "histogram": ("_count", "_sum", "_bucket"),
}
_HEAD_WORDS: Final = ("HELP", "TYPE")


class _Family:
    """The samples of the family the page is in (named by `# HELP` / `# TYPE`)."""

    __slots__ = ("kind", "members", "name", "samples")

    def __init__(self, name: str = "", kind: str = "untyped") -> None:
        self.name = name
        self.kind = kind
        self.members: tuple[str, ...] = (name,) if name else ()
        self.samples: list[tuple[str, float]] = []

    def closed(self) -> list[tuple[str, float]]:
        """The family's samples as the text format names them: a counter's samples end in
        `_total` whatever the page wrote."""
        if self.kind == "counter" and not self.name.endswith("_total"):
            return [(name + "_total", value) for name, value in self.samples]
        return self.samples


def plain_samples(text: str) -> list[tuple[str, float]] | None:
    """(sample name, value) in page order, or None when a line is outside the plain part.

    >>> plain_samples('# TYPE r counter\\nr{m="a"} 2\\nr{m="b"} 3 1700000000\\ng 1.5\\n')
    [('r_total', 2.0), ('r_total', 3.0), ('g', 1.5)]
    >>> plain_samples('x{a="1",a="2"} 1') is None  # the full parser says why
    True
    """
    if _NOT_PLAIN.search(text):
        return None
    page = _Page()
    for raw in text.split("\n"):
        line = raw.strip()
        if line and not (page.head(line) if line[0] == "#" else page.sample(line)):
            return None
    page.close_family()
    return page.found


class _Page:
    """The samples read so far and the family the page is in; each line's method says False
    when the line is outside the plain part."""

    __slots__ = ("family", "found")

    def __init__(self) -> None:
        self.found: list[tuple[str, float]] = []
        self.family = _Family()

    def close_family(self, name: str = "") -> None:
        self.found.extend(self.family.closed())
        self.family = _Family(name)

    def head(self, line: str) -> bool:
        """A comment, `# HELP` or `# TYPE` line."""
        if '"' in line or "\\" in line:
            return False
        parts = line.split(None, 3)
        if len(parts) < 3 or parts[1] not in _HEAD_WORDS:
            return len(parts) != 2 or parts[1] not in _HEAD_WORDS  # else a plain comment
        name = parts[2]
        if not _METRIC_NAME.fullmatch(name):
            return False
        if parts[1] == "HELP":
            if name != self.family.name:
                self.close_family(name)
            return True
        kind = parts[3] if len(parts) == 4 else ""
        suffixes = _SUFFIXES.get(kind)
        if suffixes is None or (kind == "counter" and name == "_total"):
            return False
        if name != self.family.name:
            self.close_family(name)
        self.family.kind = kind
        self.family.members = tuple(name + suffix for suffix in suffixes)
        return True

    def sample(self, line: str) -> bool:
        """A sample line: kept in its family, or alone when outside it (which ends it)."""
        sample = _SAMPLE.fullmatch(line)
        if sample is None:
            return False
        name, labels, value = sample.groups()
        if labels is not None:
            names = _LABEL_NAMES.findall(labels)
            if len(set(names)) != len(names) or any(label[:2] == "__" for label in names):
                return False
        if not _VALUE.fullmatch(value):
            return False
        if name in self.family.members:
            self.family.samples.append((name, float(value)))
        else:
            self.close_family()
            self.found.append((name, float(value)))
        return True
