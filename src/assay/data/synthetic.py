"""Synthetic requests: prompts of exactly the sampled token count, seeded per request index."""

from __future__ import annotations

import random
from typing import Final, Literal, Self

from pydantic import Field, JsonValue, PrivateAttr, model_validator

from assay.core import GenerationRequest
from assay.core.trusted import trusted
from assay.data.media import (
    AUDIO_SAMPLE_RATE,
    ImageFormat,
    ImageSize,
    synthetic_image_url,
    synthetic_wav,
    user_content,
)
from assay.data.source import RequestSettings, asked_limits, index_rng, request_id, shared_rng
from assay.data.token_count import (
    FixedCount,
    TokenCount,
    largest_count,
    sample_token_count,
    smallest_count,
)
from assay.data.tokenizer import Tokenizer
from assay.data.tokenizer_spec import load_tokenizer
from assay.errors import DataError
from assay.spec.endpoint import Carries
from assay.spec.limits import (
    MAX_AUDIO_SECONDS,
    MAX_IMAGE_PIXELS_PER_REQUEST,
    MAX_IMAGES_PER_REQUEST,
    MAX_TOKENS_PER_REQUEST,
)

# Joining two texts can merge or split tokens at the seam; resampling the tail with a corrected
# length settles it in one or two rounds for real tokenizers.
_MAX_SEAM_ROUNDS: Final = 16


class _Runtime:
    """What a source builds on first use: never pickled, never part of equality."""

    __slots__ = ("audio", "chat", "prefix", "text_fields", "tokenizer")

    def __init__(self) -> None:
        self.tokenizer: Tokenizer | None = None
        self.prefix: str | None = None
        # The fields every plain-text request shares (`_plain_text_fields`); `{}` once decided
        # that this source's requests are not plain text, `None` before deciding.
        self.text_fields: dict[str, object] | None = None
        # Whether those requests carry their text as a chat message (else as a prompt).
        self.chat = False
        # The synthetic WAV every request carries, built once (`_audio`).
        self.audio: bytes | None = None

    def __eq__(self, other: object) -> bool:
        # Two sources with the same config are equal whether or not either has built its cache.
        return isinstance(other, _Runtime)

    __hash__ = None  # type: ignore[assignment]  # mutable cache: not hashable

    def __reduce__(self) -> tuple[type[_Runtime], tuple[()]]:
        # A copy in another process rebuilds the tokenizer itself instead of receiving it.
        return (_Runtime, ())


class SyntheticSource(RequestSettings):
    """Unbounded synthetic requests; request `i` depends only on `(seed, i)` and this config.

    The prompt counts exactly the sampled number of tokens under `tokenizer` (the shared prefix
    included); `max_output_tokens` is the sampled output count. For embeddings each request holds
    `embeddings_batch_size` inputs, each of its own sampled length. For rerank and score the
    prompt is the query, and each request holds `documents` documents of `document_tokens`
    each (sampled per document, without the shared prefix); `prompt_tokens` counts the query
    and the documents.

    >>> source = SyntheticSource(model="m", prompt_tokens=FixedCount(value=12), seed=3)
    >>> request = source.request(5)
    >>> request.request_id, request.prompt_tokens, request.max_output_tokens
    ('req-00000005', 12, 128)
    >>> request == source.request(5)
    True
    """

    kind: Literal["synthetic"] = "synthetic"
    prompt_tokens: TokenCount = FixedCount(value=256)
    output_tokens: TokenCount = FixedCount(value=128)
    shared_prefix_tokens: int = Field(default=0, ge=0)
    embeddings_batch_size: int = Field(default=1, ge=1)
    documents: int = Field(default=8, ge=1)
    document_tokens: TokenCount = FixedCount(value=128)
    # Images and audio in each chat request (the images' count may be a distribution), and the
    # length of the audio a transcription uploads.
    images: TokenCount = FixedCount(value=0)
    image_size: ImageSize = ImageSize(width=512, height=512)
    image_format: ImageFormat = "png"
    audio_seconds: float = Field(default=0.0, ge=0, allow_inf_nan=False)  # see _media_problem

    _runtime: _Runtime = PrivateAttr(default_factory=_Runtime)

    @model_validator(mode="after")
    def _counts_fit(self) -> Self:
        shortest = smallest_count(self.prompt_tokens)
        if shortest < 1:
            raise ValueError("prompt_tokens must be at least 1: servers reject empty prompts")
        if self.shared_prefix_tokens > shortest:
            raise ValueError(
                f"shared_prefix_tokens ({self.shared_prefix_tokens}) exceeds the smallest "
                f"prompt length ({shortest}); the prefix is part of the prompt's count"
            )
        if self.endpoint.traits.generates and smallest_count(self.output_tokens) < 1:
            raise ValueError("output_tokens must be at least 1 for a generation endpoint")
        if smallest_count(self.document_tokens) < 1:
            raise ValueError("document_tokens must be at least 1: servers reject empty documents")
        traits = self.endpoint.traits
        if self._carries_images() and not traits.takes_images:
            raise ValueError(f"images go in chat messages, not to the {self.endpoint} endpoint")
        problem = self._media_problem() or self._documents_problem()
        if problem is not None:
            raise ValueError(problem)
        if self.audio_seconds and not traits.takes_audio:
            raise ValueError(f"audio goes to chat or transcriptions, not to {self.endpoint}")
        if traits.needs_audio and not self.audio_seconds:
            raise ValueError("a transcription needs audio: audio_seconds must be above 0")
        return self

    def _media_problem(self) -> str | None:
        """Images per request and their pixels together, and the audio's length, against the
        bounds of spec.limits."""
        if self.audio_seconds > MAX_AUDIO_SECONDS:
            wav_bytes = round(MAX_AUDIO_SECONDS * AUDIO_SAMPLE_RATE) * 2
            return (
                f"audio_seconds: {self.audio_seconds:g} s of audio in one request, above the "
                f"{MAX_AUDIO_SECONDS:g} s one request may carry ({wav_bytes:,} bytes of "
                f"{AUDIO_SAMPLE_RATE:,} Hz 16-bit WAV; see docs/security.md)"
            )
        most = largest_count(self.images)
        if most > MAX_IMAGES_PER_REQUEST:
            return (
                f"images: {most:,} images in one request, above the {MAX_IMAGES_PER_REQUEST} "
                "one request may carry (see docs/security.md)"
            )
        size = self.image_size
        pixels = most * size.width * size.height
        if pixels > MAX_IMAGE_PIXELS_PER_REQUEST:
            return (
                f"images: {most} images of {size} make {pixels:,} pixels in one request, above "
                f"the {MAX_IMAGE_PIXELS_PER_REQUEST:,} one request may carry (two 4096x4096; "
                "see docs/security.md)"
            )
        return None

    def _documents_problem(self) -> str | None:
        """Rerank and score: the query and every document together, one request's tokens."""
        if self.endpoint.traits.carries is not Carries.documents:
            return None
        tokens = largest_count(self.prompt_tokens) + self.documents * largest_count(
            self.document_tokens
        )
        if tokens <= MAX_TOKENS_PER_REQUEST:
            return None
        return (
            f"documents: {self.documents:,} documents of up to "
            f"{largest_count(self.document_tokens):,} tokens and the query make {tokens:,} "
            f"tokens in one request, above the {MAX_TOKENS_PER_REQUEST:,} one request may ask "
            "for (see docs/security.md)"
        )

    def _carries_images(self) -> bool:
        return not (isinstance(self.images, FixedCount) and self.images.value == 0)

    def size(self) -> int | None:
        """Synthetic sources never run out."""
        return None

    def request(self, index: int) -> GenerationRequest:
        """The request at `index`, the same in every process."""
        rng = index_rng(self.seed, index)
        private = self.__pydantic_private__  # read directly: see `_prompt`
        runtime: _Runtime = self._runtime if private is None else private["_runtime"]
        shared = runtime.text_fields
        if shared is None:
            shared = runtime.text_fields = self._plain_text_fields()
            runtime.chat = self.endpoint.traits.carries is Carries.messages
        if shared:
            return self._plain_text_request(index, rng, shared, runtime)
        return self._built_request(index, rng)

    def _plain_text_fields(self) -> dict[str, object]:
        """The fields shared by every request of a source of plain text prompts (a chat message
        or a prompt, no images or audio), in `GenerationRequest`'s order; `{}` for any other."""
        traits = self.endpoint.traits
        match traits.carries:
            case Carries.messages | Carries.prompt:
                pass  # one text: `_plain_text_request` fills `messages` or `prompt`
            case Carries.inputs | Carries.documents | Carries.audio:
                return {}
        if not traits.generates or self._carries_images() or self.audio_seconds:
            return {}
        # A built request's fields are its `__dict__`, in field order: a copy to fill in.
        return dict(self._request(0, prompt_tokens=None).__dict__)

    def _plain_text_request(
        self, index: int, rng: random.Random, shared: dict[str, object], runtime: _Runtime
    ) -> GenerationRequest:
        """What `_built_request` builds for a plain text prompt, from the fields every request
        shares: the same draws from `rng` in the same order, without deciding per request."""
        # A fixed count draws nothing from `rng` (`sample_token_count`): read it directly.
        spec = self.prompt_tokens
        prompt_count = spec.value if type(spec) is FixedCount else sample_token_count(spec, rng)
        spec = self.output_tokens
        output_count: int | None = (
            spec.value if type(spec) is FixedCount else sample_token_count(spec, rng)
        )
        tokenizer = runtime.tokenizer
        if tokenizer is not None and runtime.prefix == "":
            text = tokenizer.sample_text(prompt_count, rng)  # what `_prompt` does without a prefix
        else:
            text = self._prompt(prompt_count, rng)
        fields = shared.copy()  # keeps the field order; the keys set below are already there
        fields["request_id"] = request_id(index)
        mix = self.mix
        if mix is not None:
            fields["model"] = mix.pick(self.seed, index)
        if runtime.chat:
            fields["messages"] = ({"role": "user", "content": text},)
        else:
            fields["prompt"] = text
        if self.extra_body:
            output_count, fields["ignore_eos"] = asked_limits(
                self.endpoint, self.extra_body, output_count, self.ignore_eos
            )
        fields["max_output_tokens"] = output_count
        fields["prompt_tokens"] = prompt_count
        return trusted(GenerationRequest, fields)

    def _built_request(self, index: int, rng: random.Random) -> GenerationRequest:
        """The request at `index` from its random stream, for every kind of request."""
        match self.endpoint.traits.carries:
            case Carries.inputs:
                counts = [
                    sample_token_count(self.prompt_tokens, rng)
                    for _ in range(self.embeddings_batch_size)
                ]
                inputs = tuple(self._prompt(count, rng) for count in counts)
                return self._request(
                    index,
                    prompt=inputs[0] if len(inputs) == 1 else inputs,
                    prompt_tokens=sum(counts),
                )
            case Carries.messages:
                prompt_count, output_count, text = self._sampled_prompt(rng)
                if not self._carries_images() and not self.audio_seconds:
                    return self._request(
                        index,
                        messages=({"role": "user", "content": text},),
                        max_output_tokens=output_count,
                        prompt_tokens=prompt_count,
                    )
                # Drawn after the text, so a run's prompts do not change when images are added.
                count = sample_token_count(self.images, rng)
                images = tuple(
                    synthetic_image_url(self.image_size, self.image_format, rng)
                    for _ in range(count)
                )
                audio = self._audio() if self.audio_seconds else None
                return self._request(
                    index,
                    messages=({"role": "user", "content": user_content(text, images, audio)},),
                    max_output_tokens=output_count,
                    prompt_tokens=prompt_count,
                    images=count if self._carries_images() else None,
                )
            case Carries.audio:
                output_count = sample_token_count(self.output_tokens, rng)
                return self._request(
                    index,
                    max_output_tokens=output_count,
                    prompt_tokens=None,
                    audio_file=self._audio(),
                )
            case Carries.prompt:
                prompt_count, output_count, text = self._sampled_prompt(rng)
                return self._request(
                    index, prompt=text, max_output_tokens=output_count, prompt_tokens=prompt_count
                )
            case Carries.documents:
                query_count, _, query = self._sampled_prompt(rng)
                counts = [
                    sample_token_count(self.document_tokens, rng) for _ in range(self.documents)
                ]
                tokenizer = self.build_tokenizer()
                documents = tuple(tokenizer.sample_text(count, rng) for count in counts)
                return self._request(
                    index,
                    prompt=query,
                    documents=documents,
                    prompt_tokens=query_count + sum(counts),
                )

    def _audio(self) -> bytes:
        """The synthetic WAV of `audio_seconds`, built once from the seed and shared by every
        request (one copy in memory however many requests are built or in flight)."""
        private = self.__pydantic_private__
        runtime: _Runtime = self._runtime if private is None else private["_runtime"]
        if runtime.audio is None:
            runtime.audio = synthetic_wav(self.audio_seconds, shared_rng(self.seed, "audio"))
        return runtime.audio

    def build_tokenizer(self) -> Tokenizer:
        """The tokenizer prompts are counted with, loaded once per process on first use."""
        runtime = self._runtime
        if runtime.tokenizer is None:
            runtime.tokenizer = load_tokenizer(self.tokenizer)
        return runtime.tokenizer

    def shared_prefix(self) -> str:
        """The text every prompt starts with (empty without `shared_prefix_tokens`)."""
        runtime = self._runtime
        if runtime.prefix is None:
            tokenizer = self.build_tokenizer()
            runtime.prefix = tokenizer.sample_text(
                self.shared_prefix_tokens, shared_rng(self.seed, "shared-prefix")
            )
        return runtime.prefix

    def _request(
        self,
        index: int,
        *,
        prompt_tokens: int | None,
        prompt: str | tuple[str, ...] | None = None,
        messages: tuple[dict[str, JsonValue], ...] | None = None,
        documents: tuple[str, ...] | None = None,
        max_output_tokens: int | None = None,
        images: int | None = None,
        audio_file: bytes | None = None,
    ) -> GenerationRequest:
        # Every value is of its declared type already (this source's validated config, ints
        # from the sampler, text from the tokenizer), so the request is built unvalidated: the
        # keys follow `GenerationRequest`'s field order. `extra_body` is this source's own
        # frozen-config dict, shared read-only by its requests.
        ignore_eos = self.ignore_eos
        if self.extra_body:
            # Body fields that set the limit or ignore_eos are what the server is asked for.
            max_output_tokens, ignore_eos = asked_limits(
                self.endpoint, self.extra_body, max_output_tokens, ignore_eos
            )
        fields: dict[str, object] = {
            "request_id": request_id(index),
            "endpoint": self.endpoint,
            # One attribute test for a single-model run; a mix picks from (seed, index).
            "model": self.model if self.mix is None else self.mix.pick(self.seed, index),
            "prompt": prompt,
            "messages": messages,
            "documents": documents,
            "max_output_tokens": max_output_tokens,
            "ignore_eos": ignore_eos,
            # An endpoint that answers in one body (embeddings) is never asked to stream.
            "stream": self.stream and self.endpoint.traits.streams,
            "prompt_tokens": prompt_tokens,
            "extra_body": self.extra_body,
            "images": images,
            "audio_seconds": self.audio_seconds,
            "audio_file": audio_file,
        }
        return trusted(GenerationRequest, fields)

    def _sampled_prompt(self, rng: random.Random) -> tuple[int, int | None, str]:
        """The prompt's token count, the output limit (for an endpoint that generates) and the
        prompt text, drawn from `rng` in that order."""
        prompt_count = sample_token_count(self.prompt_tokens, rng)
        output_count: int | None = None
        if self.endpoint.traits.generates:
            output_count = sample_token_count(self.output_tokens, rng)
        return prompt_count, output_count, self._prompt(prompt_count, rng)

    def _prompt(self, n_tokens: int, rng: random.Random) -> str:
        # `self._runtime` goes through pydantic's `__getattr__`, which probes the private
        # attribute's descriptor first (a few µs, a fifth of building a request): read the
        # private values' dict directly, once per prompt.
        private = self.__pydantic_private__
        runtime: _Runtime = self._runtime if private is None else private["_runtime"]
        tokenizer = runtime.tokenizer
        prefix = runtime.prefix
        if tokenizer is None or prefix is None:
            tokenizer = self.build_tokenizer()
            prefix = self.shared_prefix()
        if not prefix:
            return tokenizer.sample_text(n_tokens, rng)
        return _join_exactly(tokenizer, prefix, n_tokens, rng)


def _join_exactly(tokenizer: Tokenizer, prefix: str, n_tokens: int, rng: random.Random) -> str:
    """`prefix`, a space, and a sampled tail, counting exactly `n_tokens` in all."""
    prefix_count = tokenizer.count(prefix)
    tail_count = n_tokens - prefix_count
    if tail_count <= 0:
        return prefix
    # The space makes the tail's first word a word of its own (" word") instead of gluing it to
    # the prefix's last one.
    for _ in range(_MAX_SEAM_ROUNDS):
        text = f"{prefix} {tokenizer.sample_text(tail_count, rng)}"
        surplus = tokenizer.count(text) - n_tokens
        if surplus == 0:
            return text
        tail_count = max(1, tail_count - surplus)
    raise DataError(
        f"tokenizer {tokenizer.name}: could not extend the shared prefix to exactly {n_tokens} "
        f"tokens in {_MAX_SEAM_ROUNDS} rounds"
    )


__all__ = ["SyntheticSource"]
