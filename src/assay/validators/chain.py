"""A validator decides whether a response is usable; validators compose into one validator."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeAlias, TypeVar, final

from returns.result import Result, Success

from assay.core.diagnostics import UnusableResponse

R = TypeVar("R")

Validator: TypeAlias = Callable[[R], Result[R, UnusableResponse]]
"""Takes a response and returns it unchanged (`Success`) or says why it is unusable (`Failure`)."""


def _accept(response: R) -> Result[R, UnusableResponse]:
    # Annotated seed: a bare `Success(r)` passed to `.bind` would type the error side as Any.
    seed: Result[R, UnusableResponse] = Success(response)
    return seed


@final
class Chain(Generic[R]):
    """Validators applied in order with `.bind`; itself a validator. Build it with `chain`."""

    __slots__ = ("_first", "_rest", "named", "steps")

    def __init__(self, steps: tuple[Validator[R], ...]) -> None:
        self.steps = steps
        self.named = tuple((validator_name(step), step) for step in steps)
        # `Success(r).bind(first)` is `first(r)`: calling it directly saves one container, the
        # most expensive object here (~0.4 us), on every response.
        self._first: Validator[R] = steps[0] if steps else _accept
        self._rest = steps[1:]

    def __call__(self, response: R) -> Result[R, UnusableResponse]:
        result: Result[R, UnusableResponse] = self._first(response)
        for step in self._rest:
            result = result.bind(step)
        return result

    def __repr__(self) -> str:
        names = ", ".join(getattr(step, "__name__", repr(step)) for step in self.steps)
        return f"chain({names})"


def validator_name(validator: Validator[R]) -> str:
    """The name a verdict records: a built-in's own name, else `module:qualified_name`.

    >>> from assay.validators import empty_response
    >>> import fractions
    >>> validator_name(empty_response), validator_name(fractions.Fraction)
    ('empty_response', 'fractions:Fraction')
    """
    name = getattr(validator, "__name__", None)
    module = getattr(validator, "__module__", None)
    if name is not None and module is not None and module.startswith("assay.validators"):
        return str(name)  # the name `--validator` and `assay validators` know it by
    qualified = getattr(validator, "__qualname__", None) or name or type(validator).__qualname__
    return f"{module}:{qualified}" if module else str(qualified)


def named_steps(validate: Validator[R]) -> tuple[tuple[str, Validator[R]], ...]:
    """The validators `validate` runs, in order, each with its name (a chain's steps, or itself).

    >>> from assay.core import Endpoint
    >>> from assay.validators import default_chain
    >>> [name for name, _ in named_steps(default_chain(Endpoint.embeddings))]
    ['empty_embedding']
    """
    if isinstance(validate, Chain):
        return validate.named
    return ((validator_name(validate), validate),)


def chain(*validators: Validator[R]) -> Validator[R]:
    """Compose validators into one validator that runs them in order; the first failure wins.

    A chain is itself a validator, so chains nest: `chain(default_chain(ep), my_check)`.

    >>> from returns.result import Failure
    >>> from assay.core import DiagnosticCode, UnusableResponse
    >>> def positive(n: int) -> Result[int, UnusableResponse]:
    ...     if n > 0:
    ...         return Success(n)
    ...     message = f"{n} is not positive"
    ...     return Failure(UnusableResponse(code=DiagnosticCode.empty_response, message=message))
    >>> chain(positive, chain(positive))(3)
    <Success: 3>
    >>> chain(positive)(-1).failure().message
    '-1 is not positive'
    """
    # Nested chains are flattened: a composed chain costs one loop, not one call per level.
    steps: list[Validator[R]] = []
    for validator in validators:
        if isinstance(validator, Chain):
            steps.extend(validator.steps)
        else:
            steps.append(validator)
    return Chain(tuple(steps))
