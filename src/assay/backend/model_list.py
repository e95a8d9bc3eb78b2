"""`/v1/models`: the models a server lists, read once before a run (not a benchmarked request).

Faults here are exceptions with a clear message, not `Failure` values: the run cannot start
without the list, and readiness decides what to retry.
"""

from __future__ import annotations

import ssl
from collections.abc import Mapping

import orjson
from pydantic import JsonValue

from assay.backend.redaction import Redactor
from assay.backend.served_models import ServedModel, served_models
from assay.backend.settings import BackendSettings
from assay.errors import ServerNotReady
from assay.h1.connection import FaultKind, WireFault
from assay.h1.fetch import fetch
from assay.h1.pool import ConnectFailure

_MODELS_PATH = "/v1/models"


async def fetch_served_models(
    settings: BackendSettings,
    redactor: Redactor,
    headers: Mapping[str, str],
    tls: ssl.SSLContext | None,
) -> list[ServedModel]:
    """The models the server lists at `/v1/models`, with their context windows where named;
    raises `ServerNotReady` when it can't (`ModelsStatus` for an error status, which readiness
    may retry)."""
    base_url = settings.display_url
    limit = settings.max_response_bytes
    try:
        answer = await fetch(
            settings.request_root + _MODELS_PATH,
            headers=headers,
            tls=tls,
            timeout_s=settings.timeouts.first_token_s,
            connect_s=settings.timeouts.connect_s,
            limit=limit,
        )
    except ConnectFailure as failure:
        if failure.tls:
            raise ServerNotReady(
                redactor.clean(
                    f"{base_url}: {failure.reason}; pass --ca-bundle PATH to trust the server's "
                    "CA, or --insecure to skip verification"
                )
            ) from None
        if failure.timed_out:
            raise _no_answer(settings) from None
        raise ModelsUnreachable(
            redactor.clean(f"no server at {base_url} ({failure.reason})")
        ) from None
    except TimeoutError:
        raise _no_answer(settings) from None
    except WireFault as fault:
        raise _broken(fault, base_url, redactor) from None
    status = answer.status
    if not 200 <= status < 300:
        raise ModelsStatus(
            status,
            redactor.clean(f"{base_url} answered {status} for {_MODELS_PATH}")
            + _status_hint(status, settings),
        )
    if answer.unreadable is not None:
        raise ServerNotReady(
            f"{base_url} answered {_MODELS_PATH} with a response that cannot be read: "
            f"{answer.unreadable}"
        )
    if len(answer.body) > limit:
        raise NotAModelList(
            f"{base_url} answered {_MODELS_PATH} with more than {limit} bytes "
            "(--max-response-bytes); that is not a model list"
        )
    return _listed_models(base_url, answer.body, redactor)


def _broken(fault: WireFault, base_url: str, redactor: Redactor) -> ServerNotReady:
    """A cut or unreadable answer: unreachable (retried) when cut, else not ready."""
    match fault.kind:
        case FaultKind.unreadable_head | FaultKind.unreadable_body:
            return ServerNotReady(
                redactor.clean(
                    f"{base_url} answered {_MODELS_PATH} with a response that cannot be read: "
                    f"{fault.detail}"
                )
            )
        case FaultKind.closed_before_response | FaultKind.cut_body:
            return ModelsUnreachable(
                redactor.clean(f"{base_url} failed on {_MODELS_PATH}: {fault.detail}")
            )


def _no_answer(settings: BackendSettings) -> ModelsUnreachable:
    return ModelsUnreachable(
        f"{settings.display_url} did not answer {_MODELS_PATH} within "
        f"{settings.timeouts.first_token_s:g} s"
    )


def _status_hint(status: int, settings: BackendSettings) -> str:
    """What to do about an error status that is the user's to fix (401/403: the API key).

    >>> local = BackendSettings(base_url="http://127.0.0.1:1")
    >>> print(_status_hint(401, local))  # doctest: +ELLIPSIS
    : no API key was sent (set OPENAI_API_KEY, or name the variable holding it with --api-key-env...
    >>> _status_hint(500, local)
    ''
    """
    if status not in (401, 403):
        return ""
    if settings.api_key is None:
        return (
            ": no API key was sent (set OPENAI_API_KEY, or name the variable holding it with "
            "--api-key-env NAME)"
        )
    return (
        ": the API key sent was refused (it is read from OPENAI_API_KEY, or from the variable "
        "--api-key-env names)"
    )


class ModelsUnreachable(ServerNotReady):
    """Nothing answered `/v1/models`: refused, reset, or no answer within the deadline."""


class NotAModelList(ServerNotReady):
    """`/v1/models` answered 2xx with something that is not a model list."""


class ModelsStatus(ServerNotReady):
    """`/v1/models` answered with a non-2xx status; readiness decides whether to retry."""

    def __init__(self, status: int, message: str) -> None:
        super().__init__(message)
        self.status = status


def _listed_models(base_url: str, body: bytes, redactor: Redactor) -> list[ServedModel]:
    try:
        parsed: JsonValue = orjson.loads(body)
    except orjson.JSONDecodeError:
        parsed = None
    listed = parsed.get("data") if isinstance(parsed, dict) else None
    if not isinstance(listed, list):
        raise NotAModelList(
            f"{base_url} answered {_MODELS_PATH} with something that is not a model list: "
            f"{redactor.excerpt(body, limit=200)!r}"
        )
    return served_models(listed)
