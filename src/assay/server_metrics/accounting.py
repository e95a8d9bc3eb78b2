"""How a server's counters count a run's requests, where that is not one request and its output
tokens per answer: the cross-check compares with what the server really counts.

Measured on vLLM 0.32 (issue 38):
- `/v1/rerank` and `/v1/score` run one engine request per (query, document) pair, so
  `vllm:request_success_total` grows by the documents of each answer (4 documents: 400 for 100
  answers), not by one.
- `/v1/audio/transcriptions` without a `language` field runs a one-token language-detection
  request before each transcription on a multilingual model: 40 finished requests and 340
  generated tokens for 20 answers of 320 tokens.
- A non-streamed transcription reports the audio's duration as its usage (`{"type":
  "duration"}`), no tokens: assay has no token count to compare.

assay's own mock counts one request per HTTP request; the cross-check accepts either way of
counting, exactly, and says which one the server's figure matched.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Final

from assay.spec.endpoint import Carries, Endpoint
from assay.spec.run import RunConfig

# The request field that names the audio's language (OpenAI's and vLLM's form).
LANGUAGE_FIELD: Final = "language"

# Why a transcription run without a language is slower and counted twice on vLLM.
LANGUAGE_DETECTION_NOTE: Final = (
    "transcriptions: no `language` is sent: vLLM then runs a language-detection pass before "
    "each transcription (in the TTFT, and one more request and token in its metrics); "
    '--extra-body \'{"language": "en"}\' skips it'
)


@dataclass(frozen=True, slots=True)
class Accounting:
    """What the run's requests are, in the terms a server's counters may use.

    `endpoint`: the endpoint the load went to. `documents_per_request`: on rerank and score,
    the documents each request scores when every request has the same number (synthetic
    documents), None when they vary (a data file). `language_sent`: whether a transcription
    names its audio's language (no detection pass then).
    """

    endpoint: Endpoint = Endpoint.chat
    documents_per_request: int | None = None
    language_sent: bool = True

    @property
    def scores_documents(self) -> bool:
        """Whether each request scores documents (rerank, score)."""
        return self.endpoint.traits.carries is Carries.documents

    @property
    def may_detect_language(self) -> bool:
        """Whether a server may run a language-detection request before each answer."""
        return self.endpoint is Endpoint.transcriptions and not self.language_sent


PLAIN: Final = Accounting()
"""Nothing known about the run's requests: one request and its output tokens per answer."""


def accounting_of(config: RunConfig) -> Accounting:
    """The accounting facts of a run's settings.

    >>> accounting_of(RunConfig.model_validate({"endpoint": "rerank", "documents": 4}))
    Accounting(endpoint=<Endpoint.rerank: 'rerank'>, documents_per_request=4, language_sent=True)
    >>> transcriptions = {"endpoint": "transcriptions", "audio_seconds": 1}
    >>> accounting_of(RunConfig.model_validate(transcriptions)).language_sent
    False
    """
    endpoint = config.target.endpoint
    documents = None
    if endpoint.traits.carries is Carries.documents and config.source.data is None:
        documents = config.source.documents
    language_sent = endpoint is not Endpoint.transcriptions or bool(
        config.request.fields().get(LANGUAGE_FIELD)
    )
    return Accounting(
        endpoint=endpoint, documents_per_request=documents, language_sent=language_sent
    )


def accounting_notes(config: RunConfig) -> tuple[str, ...]:
    """What the user should know before the run about how the server will count it.

    >>> transcriptions = {"endpoint": "transcriptions", "audio_seconds": 1}
    >>> accounting_notes(RunConfig.model_validate(transcriptions))[0][:40]
    'transcriptions: no `language` is sent: v'
    >>> accounting_notes(RunConfig.model_validate(
    ...     {"endpoint": "transcriptions", "audio_seconds": 1, "extra_body": {"language": "en"}}))
    ()
    """
    return (LANGUAGE_DETECTION_NOTE,) if accounting_of(config).may_detect_language else ()


__all__ = [
    "LANGUAGE_DETECTION_NOTE",
    "LANGUAGE_FIELD",
    "PLAIN",
    "Accounting",
    "accounting_notes",
    "accounting_of",
]
