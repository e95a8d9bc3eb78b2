"""Secrets out of everything assay stores or prints: the API key, auth-like headers, URL passwords.

A server may echo request headers anywhere: an error page, an in-band error, an `event: error`,
an invalid data line, a partial answer. The backend therefore cleans the raw bytes (and each SSE
event's data) *before* a handler reads them, so no later cap can cut a secret in half and leave
its head behind, and cleans every fault it builds once more on the way out.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from urllib.parse import unquote, urlsplit

import orjson

from assay.core.answer import TextAnswer
from assay.core.diagnostics import UnusableResponse, cap_excerpt
from assay.core.response import GenerationResponse
from assay.h1.credentials import with_url_credentials

# What is masked, and how, is the run's vocabulary (the config and the report mask with it too).
from assay.spec.target import MASK, is_secret_header

_MASK_BYTES = MASK.encode()

# Shorter values are not treated as secrets: masking every "1" or "on" in a text would destroy
# the evidence and protect nothing.
MIN_SECRET_LENGTH = 4


def header_secrets(name: str, value: str) -> list[str]:
    """The strings to hide for one secret header: the value, its token after an auth scheme
    (`Bearer sk-...`), and each cookie's value.

    >>> header_secrets("Authorization", "Bearer sk-abc123")
    ['Bearer sk-abc123', 'sk-abc123']
    """
    found = [value]
    scheme, sep, token = value.partition(" ")
    if sep and scheme.isalpha() and token.strip():
        found.append(token.strip())
    if name.lower() in ("cookie", "set-cookie"):
        for pair in value.split(";"):
            found.append(pair.partition("=")[2].strip())
    return found


def url_secrets(url: str) -> list[str]:
    """The password of `url`'s user info, as written and percent-decoded.

    >>> url_secrets("http://bob:p%40ss-99@host")
    ['p%40ss-99', 'p@ss-99']
    """
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return []
    return [] if password is None else [password, unquote(password)]


def request_secrets(url: str, headers: Mapping[str, str], marked: Iterable[str] = ()) -> list[str]:
    """What one request to `url` with `headers` sends that is secret: the URL's password, the
    Basic credentials made of its user info, and each credential header's value and token.

    >>> request_secrets("http://bob:pw-123@h/metrics", {"X-Api-Key": "k-9876", "Accept": "*/*"})
    ['pw-123', 'pw-123', 'k-9876', 'Basic Ym9iOnB3LTEyMw==', 'Ym9iOnB3LTEyMw==']
    """
    found = url_secrets(url)
    for name, value in with_url_credentials(url, headers).items():
        if is_secret_header(name, marked):
            found.extend(header_secrets(name, value))
    return found


class Redactor:
    """Replaces every known secret by a mask in text and bytes, longest secret first.

    Each secret is also hidden in its JSON-escaped spelling, since servers echo headers as JSON.

    >>> Redactor(["sk-123"]).clean("echo: Bearer sk-123")
    'echo: Bearer **********'
    >>> Redactor(["sk-123"]).excerpt(b"x" * 5 + b"sk-123", limit=7)
    'xxxxx**…[8 more]'
    """

    __slots__ = ("_bytes", "_text")

    def __init__(self, secrets: Iterable[str | None]) -> None:
        variants: set[str] = set()
        for secret in secrets:
            if secret is None or len(secret) < MIN_SECRET_LENGTH:
                continue
            variants.add(secret)
            variants.add(orjson.dumps(secret).decode()[1:-1])
        self._text = tuple(sorted(variants, key=len, reverse=True))
        self._bytes = tuple(variant.encode() for variant in self._text)

    @property
    def active(self) -> bool:
        """Whether there is anything to hide (the hot path skips the redactor when not)."""
        return bool(self._text)

    def clean(self, text: str) -> str:
        for secret in self._text:
            if secret in text:
                text = text.replace(secret, MASK)
        return text

    def clean_bytes(self, raw: bytes) -> bytes:
        for secret in self._bytes:
            if secret in raw:
                raw = raw.replace(secret, _MASK_BYTES)
        return raw

    def excerpt(self, raw: bytes | str | None, limit: int | None = None) -> str | None:
        """A capped excerpt of `raw`, cleaned before it is capped so no cut secret survives."""
        if raw is None:
            return None
        cleaned = self.clean_bytes(raw) if isinstance(raw, bytes) else self.clean(raw)
        return cap_excerpt(cleaned) if limit is None else cap_excerpt(cleaned, limit)

    def scrub(self, unusable: UnusableResponse) -> UnusableResponse:
        """`unusable` with no secret left in its message, excerpt, traceback or partial answer."""
        if not self._text:
            return unusable
        evidence = unusable.evidence
        partial = evidence.partial
        clean = self.clean
        return unusable.model_copy(
            update={
                "message": clean(unusable.message),
                "evidence": evidence.model_copy(
                    update={
                        "excerpt": None if evidence.excerpt is None else clean(evidence.excerpt),
                        "partial": None if partial is None else self.scrub_response(partial),
                        "traceback": (
                            None if evidence.traceback is None else clean(evidence.traceback)
                        ),
                    }
                ),
            }
        )

    def scrub_response(self, response: GenerationResponse) -> GenerationResponse:
        """`response` with no secret in its text, reasoning, tool calls or model name."""
        if not self._text:
            return response
        clean = self.clean
        update: dict[str, object] = {}
        for name in ("model", "finish_reason"):
            value = getattr(response, name)
            if isinstance(value, str) and clean(value) != value:
                update[name] = clean(value)
        match response.answer:
            case TextAnswer() as answer:
                scrubbed = self._scrub_text(answer)
                if scrubbed is not answer:
                    update["answer"] = scrubbed
            case _:
                pass  # vectors and scores hold no server text
        return response.model_copy(update=update) if update else response

    def _scrub_text(self, answer: TextAnswer) -> TextAnswer:
        """`answer` with no secret in its text, reasoning or tool calls (itself when clean)."""
        clean = self.clean
        update: dict[str, object] = {}
        for name in ("text", "reasoning"):
            value = getattr(answer, name)
            if clean(value) != value:
                update[name] = clean(value)
        calls = answer.tool_calls
        if calls:
            cleaned_calls = tuple(
                call.model_copy(
                    update={
                        "id": None if call.id is None else clean(call.id),
                        "name": None if call.name is None else clean(call.name),
                        "arguments": clean(call.arguments),
                    }
                )
                for call in calls
            )
            if cleaned_calls != calls:
                update["tool_calls"] = cleaned_calls
        return answer.model_copy(update=update) if update else answer
