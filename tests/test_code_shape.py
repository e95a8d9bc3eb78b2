"""The shape the house keeps: no function too branchy to read, no module too long to hold.

A function above cyclomatic complexity 20 (radon's measure: one plus each branch, loop, boolean
operator and `case`) or a module above 600 lines is where the last refactoring found hand rules
piling up; these tests keep new ones from growing back unnoticed.
"""

from __future__ import annotations

from pathlib import Path

from radon.complexity import cc_visit
from radon.visitors import Class, Function

SOURCE = Path(__file__).resolve().parent.parent / "src" / "assay"
MAX_COMPLEXITY = 20
MAX_MODULE_LINES = 600


def _functions(blocks: list[Function | Class] | list[Function]) -> list[Function]:
    """Every function and method, nested ones included: radon lists each method at the top level
    as well as under its class, so classes themselves are passed over."""
    found: list[Function] = []
    for block in blocks:
        if isinstance(block, Function):
            found.append(block)
            found.extend(_functions(block.closures))
    return found


def _modules() -> list[Path]:
    return sorted(SOURCE.rglob("*.py"))


def test_the_source_tree_is_found() -> None:
    assert len(_modules()) > 100


def test_no_function_is_above_complexity_20() -> None:
    too_branchy = [
        f"{path.relative_to(SOURCE)}:{function.lineno} {function.fullname} ({function.complexity})"
        for path in _modules()
        for function in _functions(cc_visit(path.read_text(encoding="utf-8")))
        if function.complexity > MAX_COMPLEXITY
    ]
    assert too_branchy == []


def test_no_module_is_above_600_lines() -> None:
    too_long = [
        f"{path.relative_to(SOURCE)} ({lines})"
        for path in _modules()
        if (lines := len(path.read_text(encoding="utf-8").splitlines())) > MAX_MODULE_LINES
    ]
    assert too_long == []
