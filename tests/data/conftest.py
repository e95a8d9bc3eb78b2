"""Tiny Hugging Face tokenizers trained in the test itself, so nothing is downloaded."""

from __future__ import annotations

from pathlib import Path

import pytest
from tokenizers import Tokenizer, decoders, models, pre_tokenizers, trainers

_LINES = [
    "The quick brown fox jumps over the lazy dog.",
    "A benchmark counts only what the server really served.",
    "Streams that stop without a terminal event are truncated, not completed.",
    "Every request ends in exactly one outcome: completed, errored or cancelled.",
    "Prompts of exactly the sampled length keep prefill work comparable across runs.",
]


@pytest.fixture
def word_level_file(tmp_path: Path) -> Path:
    """A word-level tokenizer.json: one token per word or punctuation mark."""
    tokenizer = Tokenizer(models.WordLevel(unk_token="[UNK]"))
    tokenizer.pre_tokenizer = pre_tokenizers.Whitespace()
    tokenizer.train_from_iterator(_LINES, trainers.WordLevelTrainer(special_tokens=["[UNK]"]))
    path = tmp_path / "word-level" / "tokenizer.json"
    path.parent.mkdir()
    tokenizer.save(str(path))
    return path


@pytest.fixture
def byte_level_bpe_file(tmp_path: Path) -> Path:
    """A GPT-2 style byte-level BPE tokenizer.json with a small merge table."""
    tokenizer = Tokenizer(models.BPE())
    tokenizer.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False)
    tokenizer.decoder = decoders.ByteLevel()
    trainer = trainers.BpeTrainer(
        vocab_size=400,
        special_tokens=["<|endoftext|>"],
        initial_alphabet=pre_tokenizers.ByteLevel.alphabet(),
    )
    tokenizer.train_from_iterator(_LINES, trainer)
    path = tmp_path / "bpe.json"
    tokenizer.save(str(path))
    return path
