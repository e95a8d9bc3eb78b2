"""Every Python example of README.md and docs/*.md passes `mypy --strict` with the project's
plugins, as a user's CI would check code copied from them (issue 20 item 7): the examples must
type-check, not only run. Each page's blocks are checked as one module, in order, as
tests/test_readme.py runs them."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
PAGES = sorted([ROOT / "README.md", *(ROOT / "docs").glob("*.md")])


def python_blocks(page: Path) -> list[str]:
    """The page's ```python blocks, in order."""
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)


def write_module(page: Path, folder: Path) -> tuple[Path, list[tuple[int, int]]]:
    """The page's blocks as one module in `folder`, and the first line of each block in it."""
    lines: list[str] = []
    starts: list[tuple[int, int]] = []
    for number, block in enumerate(python_blocks(page), start=1):
        lines.append(f"# {page.name}, python block {number}")
        starts.append((len(lines) + 1, number))
        lines.extend(block.splitlines())
    module = folder / f"{page.stem.lower().replace('-', '_')}_examples.py"
    module.write_text("\n".join(lines) + "\n", encoding="utf-8")
    return module, starts


def where(line: int, starts: list[tuple[int, int]]) -> str:
    """A module line as the page's block and line within it."""
    first, number = max((start for start in starts if start[0] <= line), default=(1, 0))
    return f"python block {number}, line {line - first + 1}"


def test_every_python_example_of_the_docs_passes_mypy_strict(tmp_path: Path) -> None:
    modules: dict[str, tuple[Path, list[tuple[int, int]]]] = {}
    for page in PAGES:
        if python_blocks(page):
            module, starts = write_module(page, tmp_path)
            modules[module.name] = (page, starts)
    assert {"readme_examples.py", "library_examples.py"} <= set(modules)
    run = subprocess.run(
        [
            sys.executable, "-m", "mypy", "--config-file", str(ROOT / "mypy.ini"),
            *(str(tmp_path / name) for name in modules),
        ],
        cwd=ROOT, capture_output=True, text=True, timeout=600, check=False,
    )  # fmt: skip
    problems = []
    for line in run.stdout.splitlines():
        found = re.match(r".*?([\w]+_examples\.py):(\d+): (.*)", line)
        if found is not None:
            page, starts = modules[found[1]]
            problems.append(f"{page.name}, {where(int(found[2]), starts)}: {found[3]}")
    assert run.returncode == 0, "\n".join(problems) or run.stdout + run.stderr
