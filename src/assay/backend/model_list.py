"""`/v1/models`: the models a server lists, read once before a run (not a benchmarked request).

Faults here are exceptions with a clear message, not `Failure` values: the run cannot start
without the list, and readiness decides what to retry.
"""

from __future__ import annotations

import asyncio

import aiohttp
import orjson
from pydantic import JsonValue
from yarl import URL

from assay.backend.redaction import Redactor
from assay.backend.served_models import ServedModel, served_models
from assay.backend.settings import BackendSettings
from assay.backend.transport_errors import connect_reason, drop_detail, parse_problem, tls_failure
from assay.errors import ServerNotReady

_MODELS_PATH = "/v1/models"


async def fetch_served_models(
    session: aiohttp.ClientSession, settings: BackendSettings, redactor: Redactor
) -> list[ServedModel]:
    """The models the server lists at `/v1/models`, with their context windows where named;
    raises `ServerNotReady` when it can't (`ModelsStatus` for an error status, which readiness
    may retry)."""
    base_url = settings.display_url
    url = URL(settings.request_root + _MODELS_PATH)
    limit = settings.max_response_bytes
    try:
        async with asyncio.timeout(settings.timeouts.first_token_s):
            async with session.get(url, allow_redirects=False) as response:
                status = response.status
                body = await _read_at_most(response.content, limit + 1)
    except aiohttp.ClientConnectorCertificateError as error:
        raise ServerNotReady(redactor.clean(f"{base_url}: {tls_failure(error)}")) from None
    except aiohttp.ClientConnectorError as error:
        raise ModelsUnreachable(
            redactor.clean(f"no server at {base_url} ({connect_reason(error)})")
        ) from None
    except TimeoutError:
        raise ModelsUnreachable(
            f"{base_url} did not answer {_MODELS_PATH} within {settings.timeouts.first_token_s:g} s"
        ) from None
    except aiohttp.ClientResponseError as error:
        raise ServerNotReady(
            redactor.clean(
                f"{base_url} answered {_MODELS_PATH} with a response that cannot be read: "
                f"{parse_problem(error)}"
            )
        ) from None
    except (aiohttp.ClientError, OSError) as error:
        raise ModelsUnreachable(
            redactor.clean(f"{base_url} failed on {_MODELS_PATH}: {drop_detail(error)}")
        ) from None
    if not 200 <= status < 300:
        raise ModelsStatus(
            status,
            redactor.clean(f"{base_url} answered {status} for {_MODELS_PATH}")
            + _status_hint(status, settings),
        )
    if len(body) > limit:
        raise NotAModelList(
            f"{base_url} answered {_MODELS_PATH} with more than {limit} bytes "
            "(--max-response-bytes); that is not a model list"
        )
    return _listed_models(base_url, body, redactor)


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


async def _read_at_most(content: aiohttp.StreamReader, limit: int) -> bytes:
    """The body up to `limit` bytes (stopping there, so a huge answer never fills memory)."""
    parts: list[bytes] = []
    size = 0
    while size < limit and (chunk := await content.readany()):
        parts.append(chunk)
        size += len(chunk)
    return b"".join(parts)


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
