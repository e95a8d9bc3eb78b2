"""The target of a run: what makes a base URL and a header sendable, and how either is shown.

Pure checks and masks, shared by the run config (which refuses a bad value before anything
starts), the backend (which sends them) and the report (which echoes them masked): a header's
value or a URL's password never reaches a stored or printed text.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Annotated, Final, TypeAlias
from urllib.parse import urlsplit

from pydantic import AfterValidator

MASK: Final = "**********"
"""What every secret is replaced by."""

# Header names whose values are credentials (matched as parts of the lower-cased name).
_SECRET_NAME_WORDS: Final = ("auth", "key", "token", "secret", "cookie", "session", "password")

_TOKEN_CHARS: Final = frozenset(
    "!#$%&'*+-.^_`|~0123456789abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ"
)


def check_target(target: str) -> str:
    """`target` if it is an http(s) base URL with a host and a valid port, else a ValueError
    saying what is wrong (the most common first mistake, a missing scheme, gets a suggestion).

    >>> check_target("http://127.0.0.1:8000")
    'http://127.0.0.1:8000'
    >>> check_target("127.0.0.1:8000")
    Traceback (most recent call last):
    ValueError: '127.0.0.1:8000' has no scheme; did you mean http://127.0.0.1:8000 ?
    """
    if target.startswith(("/", ".")):
        raise ValueError(f"{target!r}: a socket path is not supported; give an http(s):// URL")
    if "://" not in target:
        raise ValueError(f"{target!r} has no scheme; did you mean http://{target} ?")
    parts = urlsplit(target)
    if parts.scheme not in ("http", "https"):
        raise ValueError(
            f"{target!r}: the scheme must be http:// or https://, not {parts.scheme}://"
        )
    if not parts.hostname:
        raise ValueError(f"{target!r} has no host")
    try:
        port = parts.port
    except ValueError:
        raise ValueError(f"{target!r}: the port must be a number from 1 to 65535") from None
    if port == 0:
        raise ValueError(f"{target!r}: the port must be a number from 1 to 65535")
    if parts.query or parts.fragment or target.endswith(("?", "#")):
        raise ValueError(f"{target!r}: a base URL has no query string or fragment")
    return target


def check_header(name: str, value: str) -> str | None:
    """Why `name: value` cannot be sent as an HTTP header, or None when it can.

    The value itself is never quoted: it may be a credential.

    >>> check_header("X-Team", "a\\r\\nX-Evil: 1")
    'header X-Team: the value holds a line break (CR or LF)'
    """
    if not name or not set(name) <= _TOKEN_CHARS:
        return f"header name {name!r} is not a valid HTTP header name"
    if "\r" in value or "\n" in value or "\0" in value:
        return f"header {name}: the value holds a line break (CR or LF)"
    return None


def sendable_headers(headers: dict[str, str]) -> dict[str, str]:
    """`headers` when every one can be sent, else a ValueError naming the first that cannot.

    >>> sendable_headers({"X-Team": "infra"})
    {'X-Team': 'infra'}
    >>> sendable_headers({"X Team": "infra"})
    Traceback (most recent call last):
    ValueError: header name 'X Team' is not a valid HTTP header name
    """
    for name, value in headers.items():
        problem = check_header(name, value)
        if problem is not None:
            raise ValueError(problem)
    return headers


SendableHeaders: TypeAlias = Annotated[dict[str, str], AfterValidator(sendable_headers)]
"""Extra request headers, each checked by `check_header` (the run config's and the backend's)."""


def is_secret_header(name: str, marked: Iterable[str] = ()) -> bool:
    """Whether a header's value is a credential: auth-like by name, or marked by the user.

    >>> is_secret_header("X-Api-Key"), is_secret_header("Cookie"), is_secret_header("X-Team")
    (True, True, False)
    >>> is_secret_header("X-Tenant", marked=["x-tenant"])
    True
    """
    lowered = name.lower()
    if any(lowered == other.lower() for other in marked):
        return True
    return any(word in lowered for word in _SECRET_NAME_WORDS)


def mask_headers(headers: dict[str, str], marked: Iterable[str] = ()) -> dict[str, str]:
    """`headers` with every secret value replaced by the mask, for reports and repr.

    >>> mask_headers({"X-Api-Key": "k-123456", "X-Team": "infra"})
    {'X-Api-Key': '**********', 'X-Team': 'infra'}
    """
    marked = tuple(marked)
    return {
        name: MASK if is_secret_header(name, marked) else value for name, value in headers.items()
    }


def mask_url(url: str) -> str:
    """`url` with the password of its user info masked; other URLs unchanged.

    >>> mask_url("http://bob:hunter22@127.0.0.1:8000/v1")
    'http://bob:**********@127.0.0.1:8000/v1'
    >>> mask_url("http://127.0.0.1:8000")
    'http://127.0.0.1:8000'
    """
    try:
        parts = urlsplit(url)
        password = parts.password
    except ValueError:
        return url
    if password is None or "@" not in parts.netloc:
        return url
    user_info, _, host = parts.netloc.rpartition("@")
    user = user_info.partition(":")[0]
    return parts._replace(netloc=f"{user}:{MASK}@{host}").geturl()


__all__ = [
    "MASK",
    "SendableHeaders",
    "check_header",
    "check_target",
    "is_secret_header",
    "mask_headers",
    "mask_url",
    "sendable_headers",
]
