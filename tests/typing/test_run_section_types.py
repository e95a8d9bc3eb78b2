"""The run spec's sections keep their types for mypy: the load is the profile union, each
member with only its own parameters, so a parameter of another profile is a type error."""

from __future__ import annotations

from typing import assert_type

from assay.spec import Constant, Profile
from assay.spec.run import RunConfig, Target, Timeouts
from tests.typing.test_exhaustive_match import _mypy


def test_sections_are_typed_models_passed_whole() -> None:
    config = RunConfig(target=Target(url="http://127.0.0.1:8000"), load=Constant(rate=20))
    assert_type(config.load, Profile)
    assert_type(config.target.timeouts, Timeouts)
    assert isinstance(config.load, Constant)
    assert config.load.rate == 20.0


def test_a_rate_given_to_the_synchronous_profile_is_a_type_error() -> None:
    run = _mypy("rate_on_synchronous.py")
    assert run.returncode == 1, run.stdout + run.stderr
    assert 'Unexpected keyword argument "rate" for "Synchronous"' in run.stdout
    assert "Found 1 error in 1 file" in run.stdout
