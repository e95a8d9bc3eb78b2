"""aiohttp's connection and body-read errors in words a user can act on."""

from __future__ import annotations

import os
import socket

import aiohttp


def tls_failure(error: aiohttp.ClientConnectorCertificateError) -> str:
    """What failed in the TLS handshake, and the two ways out."""
    reason = getattr(error.certificate_error, "verify_message", None) or str(
        error.certificate_error
    )
    return (
        f"certificate verify failed: {reason}; pass --ca-bundle PATH to trust the server's CA, "
        "or --insecure to skip verification"
    )


def parse_problem(error: BaseException) -> str:
    """aiohttp's parser complaint in words, without the status 400 it wraps every one in."""
    cause = error.__cause__ if error.__cause__ is not None else error
    message = getattr(cause, "message", None) or str(cause) or type(cause).__name__
    text = " ".join(str(message).split())
    if "content-encoding" in text.lower():
        return f"{text} (assay asks for an uncompressed body and does not decode this encoding)"
    return text


def is_short_body(cause: BaseException) -> bool:
    message = str(getattr(cause, "message", "")).lower()
    return "not enough data" in message


def drop_detail(error: BaseException) -> str:
    """How a body read failed, in words: never aiohttp's "TransferEncodingError: 400", which
    reads like an HTTP status."""
    cause = error.__cause__
    if isinstance(cause, aiohttp.http_exceptions.ContentLengthError):
        message = str(getattr(cause, "message", "")).strip(".")
        return f"the server closed the connection before the end of the body ({message})"
    if isinstance(cause, aiohttp.http_exceptions.TransferEncodingError):
        return "the server closed the connection before the last chunk of the chunked body"
    if isinstance(error, aiohttp.ServerDisconnectedError):
        return "the server closed the connection"
    if isinstance(error, (ConnectionResetError, aiohttp.ClientOSError)):
        return f"the connection was reset ({error.strerror or error})"
    detail = str(error) or type(error).__name__
    return f"{type(error).__name__}: {detail}"


def connect_reason(error: aiohttp.ClientConnectorError) -> str:
    """ "connection refused" rather than asyncio's "Connect call failed ('127.0.0.1', 9)"; a
    host name that did not resolve says so, rather than "unknown error -2"."""
    os_error = error.os_error
    if isinstance(os_error, socket.gaierror):
        return f"host name {error.host!r} did not resolve: {os_error.strerror or os_error}"
    if os_error.errno:
        return os.strerror(os_error.errno).lower()
    return str(os_error) or type(os_error).__name__
