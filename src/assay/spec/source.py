"""Where a run's requests come from: the columns of a prompt file that assay interprets."""

from __future__ import annotations

from pydantic import BaseModel, ConfigDict


class PromptColumns(BaseModel):
    """Which keys or columns hold the prompt, the chat messages, the output length, a ShareGPT
    conversation, a session's user turns, the query and documents of a rerank or score request,
    extra body fields, images, and the model a row is sent to (over the run's model or mix)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt: str = "prompt"
    messages: str = "messages"
    output_tokens: str = "output_tokens"
    conversations: str = "conversations"
    turns: str = "turns"
    query: str = "query"
    documents: str = "documents"
    # A row key whose JSON object is merged into that request's body.
    extra_body: str = "extra_body"
    # A row's images (a list, or one value: a file path, an http(s) URL or a data: URL), and
    # the single `image` of a LLaVA-style ShareGPT row.
    images: str = "images"
    image: str = "image"
    model: str = "model"

    def interpreted(self) -> frozenset[str]:
        """Every column assay reads itself (each field names one)."""
        return frozenset(getattr(self, name) for name in type(self).model_fields)


__all__ = ["PromptColumns"]
