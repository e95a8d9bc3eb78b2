"""Validators a library user might write, loaded by the CLI tests with `--validator`."""

from __future__ import annotations

from returns.result import Result, Success

from assay.core import CustomCode, GenerationResponse, Stage, UnusableResponse
from assay.validators import reject

NOT_POLITE = CustomCode("judgetest.not_polite", meaning="the answer does not say please")
TOO_CHATTY = CustomCode(
    "judgetest.too_chatty", stage=Stage.content, meaning="more than 5 output tokens"
)


def accept_all(response: GenerationResponse) -> Result[GenerationResponse, UnusableResponse]:
    """Accepts anything: the loosest possible definition of usable."""
    return Success(response)


def explodes(response: GenerationResponse) -> Result[GenerationResponse, UnusableResponse]:
    """A validator with a bug."""
    raise RuntimeError(f"this check has a bug ({response.request_id})")


def not_polite(response: GenerationResponse) -> Result[GenerationResponse, UnusableResponse]:
    """A check of the user's own, counted under the user's own code."""
    if "please" in response.text.lower():
        return Success(response)
    return reject(response, NOT_POLITE, f"no 'please' in {len(response.text)} characters")
