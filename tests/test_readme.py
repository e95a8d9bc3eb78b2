"""The README's library example runs and does what it says."""

from __future__ import annotations

import re
from pathlib import Path

from assay.core import CustomCode, Endpoint, GenerationResponse, ResponseTiming, Stage, Usage

README = Path(__file__).resolve().parent.parent / "README.md"


def test_readme_validator_example_rejects_a_whitespace_only_answer() -> None:
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(encoding="utf-8"), re.S)
    assert blocks, "the README has a python example"
    namespace: dict[str, object] = {}
    exec(blocks[0], namespace)
    validate = namespace["validate"]
    assert callable(validate)
    blank = GenerationResponse(
        request_id="r",
        endpoint=Endpoint.chat,
        streamed=True,
        text="   ",
        terminal_seen=True,
        finish_reason="stop",
        usage=Usage(completion_tokens=3),
        timing=ResponseTiming(send_ns=0, end_ns=1),
    )
    problem = validate(blank).failure()
    assert (problem.code, problem.stage) == ("mypkg.blank_answer", Stage.content)
    assert isinstance(problem.code, CustomCode)
    usable = blank.model_copy(update={"text": "hello"})
    assert validate(usable).unwrap() == usable
