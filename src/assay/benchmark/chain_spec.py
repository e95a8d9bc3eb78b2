"""The validator chain of a run, built from names so it can be rebuilt in every process."""

from __future__ import annotations

from dataclasses import dataclass

from assay.core import Endpoint, GenerationResponse
from assay.errors import ConfigError
from assay.metrics import Slo
from assay.spec.sections import Validation
from assay.validators import Validator, chain, default_chain, resolve_validator


@dataclass(frozen=True, slots=True)
class ChainSpec:
    """A validator chain described by plain values: picklable, and what a report records.

    Calling it builds the chain: the endpoint's default chain (strict or not, `[DONE]` required
    or not) unless `use_defaults` is off, followed by the named validators in order.

    >>> from returns.result import Success
    >>> spec = ChainSpec(Endpoint.chat, strict=False, extra=("invalid_tool_call",))
    >>> spec.describe()
    'default chat chain + invalid_tool_call'
    """

    endpoint: Endpoint
    strict: bool = False
    extra: tuple[str, ...] = ()
    use_defaults: bool = True
    allow_missing_done: bool = False

    @classmethod
    def of(cls, validation: Validation, endpoint: Endpoint) -> ChainSpec:
        """The chain `validation` describes for `endpoint`.

        >>> ChainSpec.of(Validation(strict=True), Endpoint.chat).describe()
        'default chat chain (strict)'
        """
        return cls(
            endpoint=endpoint,
            strict=validation.strict,
            extra=validation.validators,
            use_defaults=validation.default_validators,
            allow_missing_done=validation.allow_missing_done,
        )

    def __call__(self) -> Validator[GenerationResponse]:
        validators = [resolve_validator(name) for name in self.extra]
        if self.use_defaults:
            validators.insert(
                0,
                default_chain(
                    self.endpoint, strict=self.strict, allow_missing_done=self.allow_missing_done
                ),
            )
        if not validators:
            raise ConfigError(
                "no validators: --no-default-validators needs at least one --validator"
            )
        return validators[0] if len(validators) == 1 else chain(*validators)

    def describe(self) -> str:
        """A short human description for reports."""
        parts = []
        if self.use_defaults:
            switches = [
                name
                for name, on in (
                    ("strict", self.strict),
                    ("[DONE] not required", self.allow_missing_done),
                )
                if on
            ]
            parts.append(
                f"default {self.endpoint.value} chain"
                + (f" ({', '.join(switches)})" if switches else "")
            )
        parts.extend(self.extra)
        return " + ".join(parts)


def slo_of(validation: Validation) -> Slo | None:
    """The goodput SLO, when any limit was given.

    >>> slo_of(Validation()) is None
    True
    """
    return Slo.model_validate(validation.slo) if validation.slo else None
