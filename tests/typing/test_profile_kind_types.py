"""A new load profile is a type error until every place has decided: its kind must be in
`ProfileKind` (the members' kinds are returned as one), and each decision per kind is a
`match` over `ProfileKind` that mypy checks is exhaustive."""

from __future__ import annotations

from tests.typing.test_exhaustive_match import _mypy


def test_a_kind_missing_from_profile_kind_and_from_a_match_over_it_are_type_errors() -> None:
    run = _mypy("profile_kind_unlisted.py")
    assert run.returncode == 1, run.stdout + run.stderr
    unlisted = "Incompatible return value type (got \"Literal['synchronous', 'unlisted']\""
    assert unlisted in run.stdout
    # The kinds the match forgets: 'replay', then any kind added to `ProfileKind` since.
    assert "unhandled case for values of type \"Literal['replay'" in run.stdout
    assert "Found 3 errors in 1 file" in run.stdout
