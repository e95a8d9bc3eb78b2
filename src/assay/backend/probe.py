"""One request before the load, so a wrong endpoint stops the run at once instead of after
thousands of identical 404s, with the endpoint the server does answer.

The probe is the run's first request cut to one output token; it is not part of the results.
A run stops only for statuses every request of the run would get as well: 404/405 (no such
route), 400/422 (the server refuses the request's shape). Any other outcome, an injected fault
or a slow answer included, is left for the run to measure.
"""

from __future__ import annotations

import io
import wave
from collections.abc import Callable
from typing import Final

from pydantic import JsonValue
from returns.result import Failure

from assay.backend.client import Backend, open_backend
from assay.backend.model_list import ModelsStatus, ModelsUnreachable, NotAModelList
from assay.backend.readiness import Interrupted, until_interrupted
from assay.backend.settings import BackendSettings
from assay.core.clock import MonotonicClock
from assay.core.diagnostics import DiagnosticCode, UnusableResponse
from assay.core.request import GenerationRequest
from assay.errors import ServerNotReady
from assay.spec.endpoint import Carries, Endpoint

NO_ROUTE: Final = frozenset({404, 405})
# Body fields that set how many tokens an answer has, as the servers' APIs spell them: the probe
# asks for one token whatever `--extra-body` says.
_LENGTH_FIELDS: Final = frozenset(
    {"max_tokens", "max_completion_tokens", "max_output_tokens", "min_tokens", "ignore_eos"}
)
REFUSED_SHAPE: Final = frozenset({400, 422})


class WrongEndpoint(ServerNotReady):
    """The probe got an answer every request of the run would get: the run would measure
    nothing."""


async def probe_endpoint(
    settings: BackendSettings,
    request: GenerationRequest,
    *,
    interrupted: Callable[[], bool] = lambda: False,
) -> bool:
    """Send `request` (cut to one output token) once; True when the run may go ahead, False
    when `interrupted()` turned true. Raises `WrongEndpoint` for a 404/405/400/422."""
    probe = probe_of(request)
    try:
        async with open_backend(settings, MonotonicClock()) as backend:
            unusable = _http_failure(await until_interrupted(backend.resolve(probe), interrupted))
            if unusable is None or unusable.evidence.http_status not in NO_ROUTE | REFUSED_SHAPE:
                return True
            head = f"the probe request got {unusable.message}"
            if unusable.evidence.http_status in REFUSED_SHAPE:
                raise WrongEndpoint(
                    f"{head}; every request of the run would get the same answer, so none "
                    "was sent (check the model name, --extra options and the server's limits)"
                )
            answered: list[Endpoint] = []
            for other in Endpoint:
                if other is request.endpoint:
                    continue
                refused = _http_failure(
                    await until_interrupted(
                        backend.resolve(_tiny_request(other, probe.model)), interrupted
                    )
                )
                if refused is None or refused.evidence.http_status not in NO_ROUTE:
                    answered.append(other)
            served = None if answered else await until_interrupted(_served(backend), interrupted)
    except Interrupted:
        return False
    if answered:
        choices = ", ".join(f"--endpoint {other.value} ({other.path})" for other in answered)
        hint = f"the server does answer: {choices}"
    elif served and probe.model not in served:
        # Every route said 404 for this model while /v1/models lists others: the model is wrong.
        hint = f"model {probe.model!r} is not served here; served: {', '.join(served)}"
    else:
        hint = (
            "no other endpoint answered either: is this an OpenAI-compatible server? (check "
            "the target URL's path prefix)"
        )
    raise WrongEndpoint(f"{head}; nothing was sent; {hint}")


async def _served(backend: Backend) -> list[str]:
    """The models `/v1/models` lists; empty when it lists none or cannot be read."""
    try:
        return await backend.list_models()
    except (ModelsStatus, ModelsUnreachable, NotAModelList):
        return []


def probe_of(request: GenerationRequest) -> GenerationRequest:
    """The probe made of the run's first request: its own id (a server log shows two requests,
    not one id twice) and one output token, whatever `extra_body` asks.

    >>> from assay.spec.endpoint import Endpoint
    >>> first = GenerationRequest(request_id="req-00000000", endpoint=Endpoint.chat, model="m",
    ...     prompt="hi", max_output_tokens=128, extra_body={"max_tokens": 4, "top_k": 2})
    >>> probe = probe_of(first)
    >>> probe.request_id, probe.max_output_tokens, probe.extra_body
    ('req-00000000-probe', 1, {'top_k': 2})
    """
    extra = {key: value for key, value in request.extra_body.items() if key not in _LENGTH_FIELDS}
    return request.model_copy(
        update={
            "request_id": f"{request.request_id}-probe",
            "max_output_tokens": 1 if request.endpoint.traits.generates else None,
            "ignore_eos": False,
            "extra_body": extra,
        }
    )


def _http_failure(result: object) -> UnusableResponse | None:
    """The failure of an answer with an `http_status` code, else None."""
    match result:
        case Failure(UnusableResponse(code=DiagnosticCode.http_status) as unusable):
            return unusable
        case _:
            return None


def _tiny_request(endpoint: Endpoint, model: str) -> GenerationRequest:
    """A one-token, non-streamed question for `endpoint`, to see whether the route exists."""
    text = "Say hi."
    traits = endpoint.traits
    prompt: str | None = None
    messages: tuple[dict[str, JsonValue], ...] | None = None
    documents: tuple[str, ...] | None = None
    audio: bytes | None = None
    match traits.carries:
        case Carries.messages:
            messages = ({"role": "user", "content": text},)
        case Carries.prompt | Carries.inputs:
            prompt = text
        case Carries.documents:
            prompt, documents = text, ("Hi.",)
        case Carries.audio:
            audio = _silence(0.25)
    return GenerationRequest(
        request_id="probe",
        endpoint=endpoint,
        model=model,
        prompt=prompt,
        messages=messages,
        documents=documents,
        max_output_tokens=1 if traits.generates else None,
        stream=False,
        audio_file=audio,
    )


def _silence(seconds: float) -> bytes:
    """A WAV file of `seconds` of silence (16 kHz mono 16-bit): the probe's audio."""
    out = io.BytesIO()
    with wave.open(out, "wb") as wav:
        wav.setnchannels(1)
        wav.setsampwidth(2)
        wav.setframerate(16_000)
        wav.writeframes(bytes(2 * round(seconds * 16_000)))
    return out.getvalue()


__all__ = ["WrongEndpoint", "probe_endpoint"]
