"""A validator decides whether a response is usable; validators compose into one validator, and
a content validator says no with `reject`."""

from __future__ import annotations

from collections.abc import Callable
from typing import Generic, TypeAlias, TypeVar, final

from returns.result import Failure, Result, Success

from assay.core.diagnostics import CustomCode, DiagnosticCode, Evidence, UnusableResponse
from assay.core.response import GenerationResponse

R = TypeVar("R")

Validator: TypeAlias = Callable[[R], Result[R, UnusableResponse]]
"""Takes a response and returns it unchanged (`Success`) or says why it is unusable (`Failure`)."""

Screen: TypeAlias = Callable[[R], bool]
"""A cheap test of a response: `True` promises its validator would return `Success(response)`."""

_SCREEN = (
    "assay_screen"  # the attribute `screened` sets: distinctive, so no object has it by chance
)


def _accept(response: R) -> Result[R, UnusableResponse]:
    # Annotated seed: a bare `Success(r)` passed to `.bind` would type the error side as Any.
    seed: Result[R, UnusableResponse] = Success(response)
    return seed


@final
class Chain(Generic[R]):
    """Validators applied in order with `.bind`; itself a validator. Build it with `chain`."""

    __slots__ = ("_first", "_rest", "named", "screened_steps", "steps")

    def __init__(self, steps: tuple[Validator[R], ...]) -> None:
        self.steps = steps
        self.named = tuple((validator_name(step), step) for step in steps)
        # Read once here: looking each screen up per response would cost what it saves.
        self.screened_steps = tuple((name, step, screen_of(step)) for name, step in self.named)
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


def screened(screen: Screen[R]) -> Callable[[Validator[R]], Validator[R]]:
    """Give a validator a screen: a cheap test whose `True` means the validator would accept.

    `judge` skips a validator whose screen passes (most answers pass most checks, and a
    `Success` costs more than the test), and calls it otherwise, or when the screen raises. The
    validator itself is returned unchanged, with its name, so called directly it behaves as
    before. The validator must be an object that takes attributes (a function does).

    >>> from returns.result import Failure
    >>> from assay.core import DiagnosticCode, UnusableResponse
    >>> @screened(lambda n: n > 0)
    ... def positive(n: int) -> Result[int, UnusableResponse]:
    ...     if n > 0:
    ...         return Success(n)
    ...     return Failure(UnusableResponse(code=DiagnosticCode.empty_response, message="not > 0"))
    >>> positive(3), screen_of(positive) is not None, positive.__name__
    (<Success: 3>, True, 'positive')
    """

    def attach(validator: Validator[R]) -> Validator[R]:
        setattr(validator, _SCREEN, screen)
        return validator

    return attach


def screen_of(validator: Validator[R]) -> Screen[R] | None:
    """The screen `screened` gave `validator`, or `None` when it has none."""
    screen: Screen[R] | None = getattr(validator, _SCREEN, None)
    return screen


def screened_steps(
    validate: Validator[R],
) -> tuple[tuple[str, Validator[R], Screen[R] | None], ...]:
    """`named_steps`, each with its screen (or `None`): what `judge` runs, in order.

    >>> from assay.core import Endpoint
    >>> from assay.validators import default_chain
    >>> [(name, screen is not None) for name, _, screen in screened_steps(
    ...     default_chain(Endpoint.embeddings))]
    [('empty_embedding', True)]
    """
    if isinstance(validate, Chain):
        return validate.screened_steps
    return ((validator_name(validate), validate, screen_of(validate)),)


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


def reject(
    response: GenerationResponse,
    code: DiagnosticCode | CustomCode,
    message: str,
    excerpt: str | None = None,
) -> Result[GenerationResponse, UnusableResponse]:
    """A validator's failure whose evidence is the response itself (with any usage it had) and
    the HTTP status it came with; `code` may be a built-in code or a library user's `CustomCode`.

    >>> from assay.core import Endpoint, ResponseTiming
    >>> r = GenerationResponse(request_id="r1", endpoint=Endpoint.chat, streamed=False,
    ...                        timing=ResponseTiming(send_ns=0, end_ns=1))
    >>> reject(r, DiagnosticCode.empty_response, "nothing").failure().evidence.partial is r
    True
    """
    evidence = Evidence(http_status=response.http_status, partial=response, excerpt=excerpt)
    return Failure(UnusableResponse(code=code, message=message, evidence=evidence))
