"""The Python examples of README.md, docs/library.md and docs/extending.md run (each page top
to bottom, as one script, in a scratch folder), and the README's validator example does what
it says."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from assay.core import (
    CustomCode,
    Endpoint,
    GenerationResponse,
    ResponseTiming,
    Stage,
    TextAnswer,
    Usage,
)

ROOT = Path(__file__).resolve().parent.parent
README = ROOT / "README.md"
PAGES = [README, ROOT / "docs" / "library.md", ROOT / "docs" / "extending.md"]


def python_blocks(page: Path) -> list[str]:
    """The page's ```python blocks, in order."""
    return re.findall(r"```python\n(.*?)```", page.read_text(encoding="utf-8"), re.S)


def run_page(page: Path) -> dict[str, object]:
    """Run every Python block of `page` in one namespace, as a script would; return it."""
    namespace: dict[str, object] = {"__name__": "__main__"}
    for number, block in enumerate(python_blocks(page), start=1):
        exec(compile(block, f"{page.name}, python block {number}", "exec"), namespace)
    return namespace


@pytest.mark.parametrize("page", PAGES, ids=lambda page: page.name)
def test_every_python_example_of_the_page_runs(
    page: Path, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    assert python_blocks(page), f"{page.name} has no python example"
    monkeypatch.chdir(tmp_path)  # an example that writes a run folder writes it here
    run_page(page)


def test_readme_validator_example_rejects_a_whitespace_only_answer() -> None:
    (example,) = [block for block in python_blocks(README) if "def not_blank" in block]
    namespace: dict[str, object] = {"__name__": "__main__"}
    exec(example, namespace)
    validate = namespace["validate"]
    assert callable(validate)
    blank = GenerationResponse(
        request_id="r",
        endpoint=Endpoint.chat,
        streamed=True,
        answer=TextAnswer(text="   "),
        terminal_seen=True,
        finish_reason="stop",
        usage=Usage(completion_tokens=3),
        timing=ResponseTiming(send_ns=0, end_ns=1),
    )
    problem = validate(blank).failure()
    assert (problem.code, problem.stage) == ("mypkg.blank_answer", Stage.content)
    assert isinstance(problem.code, CustomCode)
    usable = blank.model_copy(update={"answer": TextAnswer(text="hello")})
    assert validate(usable).unwrap() == usable
