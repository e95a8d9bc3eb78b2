"""What a run is: the vocabulary every other layer reads, at the bottom of the house.

Plain frozen, typed models and closed sets, with no I/O and no behaviour beyond validation:
the endpoints and their traits (`endpoint`), the load profiles and what each owes the
accounting (`load`), the constraints and stop reasons (`constraints`), what makes a target URL
and a header sendable and how secrets in them are masked (`target`), the SLOs and validity
thresholds (`validation`). Nothing here imports any other part of assay (an import contract in
pyproject.toml keeps it so).

The run spec itself, `RunConfig` and the `RunEcho` a report keeps, is `assay.spec.run`: import
it from there (building its models takes about 30 ms, which the layers that only need an
endpoint's traits do not pay).
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
    RampUp,
    RateRamp,
    Replay,
    StepLoad,
    Sweep,
    Synchronous,
    Throughput,
    pacing,
)
from assay.spec.target import (
    SendableHeaders,
    check_header,
    check_target,
    mask_headers,
    mask_url,
)
from assay.spec.validation import (
    DEFAULT_MAX_ERROR_RATE,
    DEFAULT_MAX_NOT_SENT_RATE,
    SLO_KEYS,
)

__all__ = [
    "DEFAULT_MAX_ERROR_RATE",
    "DEFAULT_MAX_NOT_SENT_RATE",
    "NS_PER_S",
    "SLO_KEYS",
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
    "RampUp",
    "RateRamp",
    "Replay",
    "SendableHeaders",
    "StepLoad",
    "StopReason",
    "Sweep",
    "Synchronous",
    "Throughput",
    "check_header",
    "check_target",
    "mask_headers",
    "mask_url",
    "pacing",
]
