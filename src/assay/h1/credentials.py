"""Credentials written in a URL's user info (`http://user:password@host/`), sent as HTTP Basic
authentication: user info never goes on the wire as part of a URL (RFC 9110 §4.2.4), so a
client that was given one sends it as an `Authorization: Basic ...` header instead, as curl and
aiohttp do. The target's requests and every side request (model list, metrics scrapes) share
this one encoding.
"""

from __future__ import annotations

import base64
from collections.abc import Mapping
from urllib.parse import unquote, urlsplit


def basic_authorization(url: str) -> str | None:
    """The `Authorization` value of the user info of `url` (percent-decoded, UTF-8), else None.

    >>> basic_authorization("http://bob:p%40ss@127.0.0.1:8000/metrics")
    'Basic Ym9iOnBAc3M='
    >>> basic_authorization("http://bob@h/"), basic_authorization("http://h/")
    ('Basic Ym9iOg==', None)
    """
    parts = urlsplit(url)
    if parts.username is None:
        return None
    pair = f"{unquote(parts.username)}:{unquote(parts.password or '')}"
    return "Basic " + base64.b64encode(pair.encode()).decode()


def with_url_credentials(url: str, headers: Mapping[str, str]) -> Mapping[str, str]:
    """`headers`, with the Basic credentials of `url`'s user info added unless they already
    hold an Authorization header (any case: a header given wins over the URL).

    >>> with_url_credentials("http://bob:pw@h/", {"Accept": "*/*"})
    {'Accept': '*/*', 'Authorization': 'Basic Ym9iOnB3'}
    >>> with_url_credentials("http://bob:pw@h/", {"authorization": "Bearer k"})
    {'authorization': 'Bearer k'}
    """
    authorization = basic_authorization(url)
    if authorization is None or any(name.lower() == "authorization" for name in headers):
        return headers
    return {**headers, "Authorization": authorization}


__all__ = ["basic_authorization", "with_url_credentials"]
