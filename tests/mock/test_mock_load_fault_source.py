"""The load faults of a finite mock are one closed set, written once in the run's vocabulary:
`assay run --mock-load-fault` (the spec's `Mock` section) and the mock's own `ServerModel`
(`assay mock --load-fault`) accept the same names because they read the same type."""

from __future__ import annotations

from typing import get_args

import pytest
from pydantic import ValidationError

from assay.mock import capacity
from assay.mock.capacity import ServerModel
from assay.spec import sections
from assay.spec.sections import Mock


def test_the_mock_takes_its_load_faults_from_the_spec() -> None:
    assert capacity.LoadFault is sections.LoadFault
    read_by: list[object] = [
        Mock.model_fields["load_fault"].annotation,
        ServerModel.model_fields["fault"].annotation,
    ]
    assert read_by == [sections.LoadFault, sections.LoadFault]


@pytest.mark.parametrize("fault", get_args(sections.LoadFault))
def test_every_load_fault_the_run_accepts_the_mock_serves(fault: str) -> None:
    section = Mock.model_validate({"fault_past": 3, "load_fault": fault})
    server = ServerModel(fault_past=3, fault=section.load_fault)
    assert server.fault_name in {"empty_stream", "truncated_stream"}


def test_a_load_fault_outside_the_set_is_refused_by_both() -> None:
    with pytest.raises(ValidationError):
        Mock.model_validate({"load_fault": "slow"})
    with pytest.raises(ValidationError):
        ServerModel.model_validate({"fault_past": 3, "fault": "slow"})
