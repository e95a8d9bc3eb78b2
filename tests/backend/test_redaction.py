"""The redactor: every spelling of every credential goes, a cap never keeps half of one."""

from __future__ import annotations

from pydantic import SecretStr

from assay.backend import BackendSettings
from assay.backend.redaction import Redactor
from assay.core import DiagnosticCode, Endpoint, GenerationResponse, TextAnswer, UnusableResponse
from assay.core.diagnostics import Evidence
from assay.core.response import ResponseTiming
from assay.spec.target import MASK

KEY = "sk-SECRET-CANARY-0f9e8d7c6b5a"


def test_excerpt_redacts_before_capping_so_no_head_of_a_key_survives() -> None:
    raw = b"x" * 2040 + f"Bearer {KEY}".encode()
    excerpt = Redactor([KEY]).excerpt(raw)
    assert excerpt is not None
    assert KEY[:6] not in excerpt


def test_json_escaped_spelling_is_redacted_too() -> None:
    secret = 'p/a"ss\\word-1'
    echoed = '{"echo": "p/a\\"ss\\\\word-1"}'
    assert Redactor([secret]).clean(echoed) == f'{{"echo": "{MASK}"}}'


def test_settings_collect_every_credential() -> None:
    settings = BackendSettings(
        base_url="http://bench:pw-CANARY-13@127.0.0.1:8000",
        api_key=SecretStr(KEY),
        headers={
            "X-Auth-Token": "tok-CANARY-1",
            "Cookie": "a=cookie-CANARY-2; b=cookie-CANARY-3",
            "X-Tenant": "tenant-CANARY-4",
            "X-Team": "infra-team",
        },
        secret_headers=("x-tenant",),
    )
    text = (
        f"{KEY} tok-CANARY-1 cookie-CANARY-2 cookie-CANARY-3 tenant-CANARY-4 pw-CANARY-13 "
        "infra-team"
    )
    assert settings.redactor().clean(text) == " ".join([MASK] * 6 + ["infra-team"])
    assert "pw-CANARY-13" not in repr(settings)
    assert "tenant-CANARY-4" not in settings.model_dump_json()


def test_url_credentials_become_a_basic_header_that_is_redacted() -> None:
    settings = BackendSettings(base_url="http://bench:pw-CANARY-13@127.0.0.1:8000")
    authorization = settings.authorization()
    assert authorization is not None
    assert authorization.startswith("Basic ")
    assert settings.request_root == "http://127.0.0.1:8000"
    token = authorization.removeprefix("Basic ")
    assert settings.redactor().clean(f"got {token}") == f"got {MASK}"


def test_short_values_are_not_treated_as_secrets() -> None:
    assert Redactor(["1"]).clean("HTTP 401 at 10:01") == "HTTP 401 at 10:01"


def test_scrub_cleans_message_excerpt_and_partial_answer() -> None:
    partial = GenerationResponse(
        request_id="r1",
        endpoint=Endpoint.chat,
        streamed=True,
        answer=TextAnswer(text=f"you sent {KEY}"),
        timing=ResponseTiming(send_ns=0, end_ns=1),
    )
    unusable = UnusableResponse(
        code=DiagnosticCode.inband_error,
        message=f"rejected {KEY}",
        evidence=Evidence(http_status=200, excerpt=f"echo {KEY}", partial=partial),
    )
    scrubbed = Redactor([KEY]).scrub(unusable)
    assert KEY not in scrubbed.model_dump_json()
    assert scrubbed.evidence.partial is not None
    assert scrubbed.evidence.partial.text == f"you sent {MASK}"


def test_server_error_message_cut_at_its_limit_keeps_no_head_of_a_key() -> None:
    from assay.backend.faults import http_status_fault

    body = ('{"error": {"message": "' + "x" * 480 + f"Bearer {KEY}" + '"}}').encode()
    unusable = http_status_fault(401, "Unauthorized", "/v1/chat/completions", body, Redactor([KEY]))
    assert KEY[:6] not in unusable.message
    assert KEY[:6] not in (unusable.evidence.excerpt or "")
