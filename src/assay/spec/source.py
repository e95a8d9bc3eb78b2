"""Where a run's requests come from: the columns of a prompt file that assay interprets."""

from __future__ import annotations

from typing import Final

from pydantic import BaseModel, ConfigDict

EXTRA_BODY_COLUMN: Final = "extra_body"
"""A row key whose JSON object is merged into that request's body."""


class PromptColumns(BaseModel):
    """Which keys or columns hold the prompt, the chat messages, the output length, a ShareGPT
    conversation, a session's user turns, the query and documents of a rerank or score request
    and extra body fields."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    prompt: str = "prompt"
    messages: str = "messages"
    output_tokens: str = "output_tokens"
    conversations: str = "conversations"
    turns: str = "turns"
    query: str = "query"
    documents: str = "documents"
    extra_body: str = EXTRA_BODY_COLUMN

    def interpreted(self) -> frozenset[str]:
        """Every column assay reads itself."""
        return frozenset(
            {
                self.prompt,
                self.messages,
                self.output_tokens,
                self.conversations,
                self.turns,
                self.query,
                self.documents,
                self.extra_body,
            }
        )


__all__ = ["EXTRA_BODY_COLUMN", "PromptColumns"]
