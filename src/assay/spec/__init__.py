"""What a run is: the vocabulary every other layer reads, at the bottom of the house.

Plain frozen, typed models and closed sets, with no I/O and no behaviour beyond validation:
the endpoints and their traits (`endpoint`), the load profiles and what each owes the
accounting (`load`), the constraints and stop reasons (`constraints`). Nothing here imports any
other part of assay (an import contract in pyproject.toml keeps it so).
"""

from assay.spec.constraints import NS_PER_S, Constraints, StopReason
from assay.spec.endpoint import Answer, Carries, Endpoint, EndpointTraits
from assay.spec.load import (
    Concurrent,
    Constant,
    Pacing,
    Poisson,
    Profile,
    ProfileKind,
    Replay,
    StepLoad,
    Sweep,
    Synchronous,
    Throughput,
    pacing,
)

__all__ = [
    "NS_PER_S",
    "Answer",
    "Carries",
    "Concurrent",
    "Constant",
    "Constraints",
    "Endpoint",
    "EndpointTraits",
    "Pacing",
    "Poisson",
    "Profile",
    "ProfileKind",
    "Replay",
    "StepLoad",
    "StopReason",
    "Sweep",
    "Synchronous",
    "Throughput",
    "pacing",
]
