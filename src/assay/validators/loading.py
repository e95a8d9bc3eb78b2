"""User validators by name: a built-in name or a `package.module:name` import path, and the
custom diagnostic codes a validator's module defines."""

from __future__ import annotations

import importlib
import inspect
import os
import sys
from collections.abc import Callable
from typing import cast

from assay.core.diagnostics import CustomCode
from assay.core.response import GenerationResponse
from assay.errors import ValidatorLoadError
from assay.validators.chain import Validator
from assay.validators.defaults import BUILTIN_VALIDATORS, builtin_validator

_POSITIONAL = (inspect.Parameter.POSITIONAL_ONLY, inspect.Parameter.POSITIONAL_OR_KEYWORD)


def load_validator(path: str) -> Validator[GenerationResponse]:
    """Import the callable named by `package.module:name` and check it takes one response.

    Raises `ValidatorLoadError` saying what is wrong: no such module or attribute, not callable,
    or not exactly one required positional parameter.

    >>> load_validator("assay.validators:empty_response").__name__
    'empty_response'
    >>> load_validator("assay.validators:no_such_check")  # doctest: +NORMALIZE_WHITESPACE
    Traceback (most recent call last):
      ...
    assay.errors.ValidatorLoadError: cannot load validator 'assay.validators:no_such_check':
    'assay.validators' has no attribute 'no_such_check'
    """
    module_name, colon, attribute = path.partition(":")
    if not colon or not module_name or not attribute:
        raise ValidatorLoadError(
            f"{path!r} is not a validator path: expected 'package.module:name'"
        )
    _working_folder_on_path()
    try:
        module = importlib.import_module(module_name)
    except ModuleNotFoundError as error:
        if error.name is not None and f"{module_name}.".startswith(f"{error.name}."):
            raise ValidatorLoadError(
                f"cannot load validator {path!r}: no module named {error.name!r}"
            ) from error
        raise ValidatorLoadError(
            f"cannot load validator {path!r}: importing {module_name!r} failed: {error}"
        ) from error
    except Exception as error:
        raise ValidatorLoadError(
            f"cannot load validator {path!r}: importing {module_name!r} raised "
            f"{type(error).__name__}: {error}"
        ) from error
    target: object = module
    for part in attribute.split("."):
        try:
            target = getattr(target, part)
        except AttributeError:
            raise ValidatorLoadError(
                f"cannot load validator {path!r}: {module_name!r} has no attribute {attribute!r}"
            ) from None
    if not callable(target):
        raise ValidatorLoadError(
            f"{path!r} is not callable (it is of type {type(target).__name__}); a validator is a "
            "function taking the response"
        )
    _check_takes_one_response(path, target)
    # The signature is checked; the return type cannot be, at run time.
    return cast(Validator[GenerationResponse], target)


def _working_folder_on_path() -> None:
    """Make the working folder importable, as `python -m` does: `--validator mypkg.checks:x`
    run from the folder that holds `mypkg` finds it. It goes last, so an installed package of
    the same name still wins."""
    folder = os.getcwd()
    if "" not in sys.path and folder not in sys.path:
        sys.path.append(folder)


def resolve_validator(spec: str) -> Validator[GenerationResponse]:
    """A built-in validator by name (`empty_response`, ...) or else a `module:name` path.

    >>> resolve_validator("truncated_stream").__name__
    'truncated_stream'
    """
    builtin = builtin_validator(spec)
    if builtin is not None:
        return builtin
    if ":" not in spec:
        known = ", ".join(b.name for b in BUILTIN_VALIDATORS)
        raise ValidatorLoadError(
            f"unknown validator {spec!r}: not a built-in ({known}) "
            "and not a 'package.module:name' path"
        )
    return load_validator(spec)


def custom_codes_of(spec: str) -> tuple[CustomCode, ...]:
    """The `CustomCode`s defined at the top level of the module a validator spec names.

    A built-in name has none. Codes are found by looking at the module's attributes (no
    registration step), in name order; the validator is loaded first, so a bad spec fails with
    the same message as in `assay run`.

    >>> custom_codes_of("empty_response")
    ()
    """
    resolve_validator(spec)
    module_name, colon, _ = spec.partition(":")
    if not colon:
        return ()
    module = sys.modules[module_name]
    found = {code.value: code for code in vars(module).values() if isinstance(code, CustomCode)}
    return tuple(found[name] for name in sorted(found))


def _check_takes_one_response(path: str, target: Callable[..., object]) -> None:
    try:
        signature = inspect.signature(target)
    except (TypeError, ValueError) as error:
        raise ValidatorLoadError(
            f"cannot inspect the signature of {path!r} ({error}); wrap it in a function that "
            "takes the response"
        ) from error
    parameters = signature.parameters.values()
    required_positional = [
        p for p in parameters if p.kind in _POSITIONAL and p.default is inspect.Parameter.empty
    ]
    required_keyword = [
        p
        for p in parameters
        if p.kind is inspect.Parameter.KEYWORD_ONLY and p.default is inspect.Parameter.empty
    ]
    if len(required_positional) != 1 or required_keyword:
        raise ValidatorLoadError(
            f"{path!r} must take exactly one required positional parameter (the response); "
            f"its signature is {signature}"
        )
