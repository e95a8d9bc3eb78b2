"""Headless Chromium (Debian's `chromium` package) driven by playwright, for the report tests.

No browser is downloaded: playwright drives the system binary. When it is missing, the test
fails with the command that installs it (`scripts/install-browser`), never skips.
"""

from __future__ import annotations

import os
import shutil
from dataclasses import dataclass
from pathlib import Path
from typing import Final

from playwright.sync_api import sync_playwright

CHROMIUM_ARGS: Final = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    # Without these Chromium tries to reach its update and sync services at every start.
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
)
ARTIFACTS_ENV: Final = "ASSAY_TEST_ARTIFACTS"


def chromium_path() -> str:
    """The system Chromium, or an AssertionError saying how to install it."""
    for name in ("chromium", "chromium-browser"):
        found = shutil.which(name)
        if found is not None:
            return found
    raise AssertionError(
        "the report.html browser test needs Debian's chromium: run scripts/install-browser "
        "(apt-get install -y chromium)"
    )


def artifacts_dir() -> Path:
    """Where screenshots go: $ASSAY_TEST_ARTIFACTS, else test-artifacts/ in the repository."""
    configured = os.environ.get(ARTIFACTS_ENV)
    root = Path(configured) if configured else Path(__file__).parents[2] / "test-artifacts"
    root.mkdir(parents=True, exist_ok=True)
    return root


@dataclass(frozen=True, slots=True)
class Box:
    """A drawn element's bounding box, in page pixels."""

    left: float
    top: float
    right: float
    bottom: float

    def overlaps(self, other: Box) -> bool:
        """Whether the two boxes share any area."""
        return (
            self.left < other.right
            and other.left < self.right
            and self.top < other.bottom
            and other.top < self.bottom
        )

    def inside(self, other: Box, slack: float = 0.5) -> bool:
        """Whether this box lies within `other` (a pixel's rounding allowed)."""
        return (
            self.left >= other.left - slack
            and self.top >= other.top - slack
            and self.right <= other.right + slack
            and self.bottom <= other.bottom + slack
        )


@dataclass(frozen=True, slots=True)
class ChartState:
    """What the browser drew for one chart div: its SVG, and the boxes of its legend, axis
    titles and right-hand axis labels (None where the chart has none)."""

    id: str
    svg_width: float
    svg_height: float
    traces: int
    annotations: int
    svg: Box | None = None
    legend: Box | None = None
    x_title: Box | None = None
    right_axis: tuple[Box, ...] = ()
    title: Box | None = None
    modebar: Box | None = None


@dataclass(frozen=True, slots=True)
class RenderedPage:
    """The charts of a page as rendered, and every console error or page error it raised."""

    charts: tuple[ChartState, ...]
    errors: tuple[str, ...]
    title: str
    cards: tuple[str, ...] = ()


_CHART_STATE_JS: Final = """
() => Array.from(document.querySelectorAll('.plot')).map(div => {
  const svg = div.querySelector('svg.main-svg');
  const box = svg ? svg.getBoundingClientRect() : {width: 0, height: 0};
  const rect = el => {
    if (!el) return null;
    const r = el.getBoundingClientRect();
    return r.width > 0 && r.height > 0 ? [r.left, r.top, r.right, r.bottom] : null;
  };
  return {
    id: div.id,
    width: box.width,
    height: box.height,
    traces: div.querySelectorAll('.trace, .scatterlayer path.js-line, .barlayer .point').length,
    annotations: div.querySelectorAll('.annotation').length,
    svg: rect(svg),
    legend: rect(div.querySelector('g.legend')),
    x_title: rect(div.querySelector('.g-xtitle text')),
    title: rect(div.querySelector('.g-gtitle text')),
    modebar: rect(div.querySelector('.modebar')),
    right_axis: Array.from(
      div.querySelectorAll('.yaxislayer-above .y2tick text, .g-y2title text')
    ).map(rect).filter(r => r !== null),
  };
})
"""
_CARDS_JS: Final = "() => Array.from(document.querySelectorAll('.card')).map(c => c.innerText)"


def _box(corners: list[float] | None) -> Box | None:
    return None if corners is None else Box(*corners)


def render(page_path: Path, screenshot: Path, timeout_ms: float = 30_000) -> RenderedPage:
    """Open `page_path` in headless Chromium, wait for every chart, screenshot the full page."""
    errors: list[str] = []
    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(
            executable_path=chromium_path(), args=list(CHROMIUM_ARGS)
        )
        try:
            page = browser.new_page(viewport={"width": 1400, "height": 1000})
            page.on("console", lambda m: errors.append(m.text) if m.type == "error" else None)
            page.on("pageerror", lambda error: errors.append(str(error)))
            # Any request that leaves the file is a dependency the page must not have.
            page.on(
                "request",
                lambda r: (
                    None
                    if r.url.startswith(("file:", "data:", "blob:"))
                    else errors.append(f"network request to {r.url}")
                ),
            )
            page.goto(page_path.resolve().as_uri())
            page.wait_for_function(
                "document.querySelectorAll('.plot').length > 0 && "
                "document.querySelectorAll('.plot svg.main-svg').length >= "
                "document.querySelectorAll('.plot').length",
                timeout=timeout_ms,
            )
            states = page.evaluate(_CHART_STATE_JS)
            cards = page.evaluate(_CARDS_JS)
            title = page.title()
            page.screenshot(path=str(screenshot), full_page=True)
        finally:
            browser.close()
    charts = tuple(
        ChartState(
            s["id"],
            s["width"],
            s["height"],
            s["traces"],
            s["annotations"],
            svg=_box(s["svg"]),
            legend=_box(s["legend"]),
            x_title=_box(s["x_title"]),
            right_axis=tuple(Box(*corners) for corners in s["right_axis"]),
            title=_box(s["title"]),
            modebar=_box(s["modebar"]),
        )
        for s in states
    )
    return RenderedPage(charts, tuple(errors), title, tuple(" ".join(c.split()) for c in cards))
