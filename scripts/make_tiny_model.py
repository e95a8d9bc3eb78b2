"""Make the tiny random-weight models the conformance servers serve, without any download.

Usage: python scripts/make_tiny_model.py OUT_DIR                   (the chat/completions Llama)
       python scripts/make_tiny_model.py --cross-encoder OUT_DIR   (a BERT cross-encoder, for
                                                                    vLLM's rerank and score)
       python scripts/make_tiny_model.py --whisper OUT_DIR         (a Whisper, for vLLM's
                                                                    transcriptions)
Run with the `model` environment's Python.

A SentencePiece tokenizer is trained on a short generated text, a 2-layer Llama gets random
weights, and both are saved in Hugging Face form; llama.cpp's converter then makes the GGUF file.
The end-of-sequence, control and byte tokens are made practically unreachable (a constant hidden
dimension that only their output rows read, negatively), so clean traffic never ends early or
streams half characters by chance, while a `logit_bias` of +100 on EOS still forces an empty
answer.
"""

from __future__ import annotations

import json
import random
import sys
from pathlib import Path

import sentencepiece
import torch
from transformers import (
    BertConfig,
    BertForSequenceClassification,
    BertTokenizerFast,
    GenerationConfig,
    LlamaConfig,
    LlamaForCausalLM,
    LlamaTokenizer,
    LlamaTokenizerFast,
    WhisperConfig,
    WhisperFeatureExtractor,
    WhisperForConditionalGeneration,
    WhisperProcessor,
    WhisperTokenizer,
)
from transformers.models.whisper.tokenization_whisper import LANGUAGES, bytes_to_unicode

VOCAB = 512
TEXT = (
    "the a server answer token stream model request benchmark fast slow empty full chunk "
    "reply usage count time first last every one two three four five six seven eight nine ten "
    "red green blue light dark river stone cloud tree bird road house city field wind rain "
    "speak read write open close start stop wait run walk sing play think know see hear"
)
CHAT_TEMPLATE = (
    "{% for message in messages %}{{ message['role'] }}: {{ message['content'] }}\n{% endfor %}"
    "{% if add_generation_prompt %}assistant:{% endif %}"
)


def train_tokenizer(out: Path) -> None:
    rng = random.Random(0)
    words = TEXT.split(" ")
    lines = [" ".join(rng.choice(words) for _ in range(12)) for _ in range(2000)]
    corpus = out / "corpus.txt"
    corpus.write_text("\n".join(lines) + "\n", encoding="utf-8")
    sentencepiece.SentencePieceTrainer.train(
        input=str(corpus),
        model_prefix=str(out / "tokenizer"),
        vocab_size=VOCAB,
        model_type="bpe",
        character_coverage=1.0,
        # Characters outside the short text (newlines and colons of the chat template) become
        # byte tokens; without them llama.cpp's tokenizer aborts on an unknown character.
        byte_fallback=True,
        unk_id=0,
        bos_id=1,
        eos_id=2,
        pad_id=-1,
        minloglevel=2,
    )
    corpus.unlink()
    (out / "tokenizer.vocab").unlink()


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    train_tokenizer(out)
    slow = LlamaTokenizer(vocab_file=str(out / "tokenizer.model"), legacy=False)
    fast = LlamaTokenizerFast.from_pretrained(str(out), legacy=False, from_slow=True)
    fast.chat_template = CHAT_TEMPLATE
    fast.save_pretrained(str(out))
    assert len(slow) == VOCAB, len(slow)

    pieces = sentencepiece.SentencePieceProcessor(model_file=str(out / "tokenizer.model"))
    # Never generated: unknown, control (BOS, EOS) and byte tokens (a lone byte can be half a
    # character, which a server streams as an empty text chunk).
    unreachable = [
        i for i in range(VOCAB) if pieces.is_unknown(i) or pieces.is_control(i) or pieces.is_byte(i)
    ]
    torch.manual_seed(0)
    config = LlamaConfig(
        vocab_size=VOCAB,
        hidden_size=128,
        intermediate_size=256,
        num_hidden_layers=2,
        num_attention_heads=2,
        num_key_value_heads=2,
        max_position_embeddings=2048,
        bos_token_id=1,
        eos_token_id=2,
        tie_word_embeddings=False,
        torch_dtype="float32",
    )
    model = LlamaForCausalLM(config)
    with torch.no_grad():
        # Dimension 0 of every embedding is a large constant, so it dominates the normalised
        # final hidden state; only the special tokens' output rows read it, negatively.
        model.model.embed_tokens.weight[:, 0] = 1.0
        model.lm_head.weight[:, 0] = 0.0
        model.lm_head.weight[unreachable, 0] = -5.0
    model.save_pretrained(str(out), safe_serialization=True)


def cross_encoder(out: Path) -> None:
    """A 2-layer BERT with one output (a relevance score per query-document pair) and a
    word-level vocabulary of the short text: what vLLM serves at /v1/rerank and /v1/score."""
    out.mkdir(parents=True, exist_ok=True)
    specials = ["[PAD]", "[UNK]", "[CLS]", "[SEP]", "[MASK]"]
    words = sorted(set(TEXT.split()))
    characters = [chr(code) for code in range(33, 127)]
    pieces = ["##" + c for c in "abcdefghijklmnopqrstuvwxyz0123456789"]
    # Once each: "a" is both a word and a letter.
    vocab = list(dict.fromkeys(specials + words + characters + pieces))
    (out / "vocab.txt").write_text("\n".join(vocab) + "\n", encoding="utf-8")
    BertTokenizerFast(vocab_file=str(out / "vocab.txt"), do_lower_case=True).save_pretrained(
        str(out)
    )
    torch.manual_seed(0)
    config = BertConfig(
        vocab_size=len(vocab),
        hidden_size=64,
        num_hidden_layers=2,
        num_attention_heads=2,
        intermediate_size=128,
        max_position_embeddings=512,
        num_labels=1,
        torch_dtype="float32",
    )
    BertForSequenceClassification(config).save_pretrained(str(out), safe_serialization=True)


def whisper(out: Path) -> None:
    """A one-layer Whisper with a byte-level vocabulary and Whisper's special tokens (the
    languages, tasks and no-timestamps token vLLM's prompts and language detection use), and
    the standard 80-bin feature extractor: what vLLM serves at /v1/audio/transcriptions."""
    out.mkdir(parents=True, exist_ok=True)
    vocab = {token: index for index, token in enumerate(bytes_to_unicode().values())}
    (out / "vocab.json").write_text(json.dumps(vocab), encoding="utf-8")
    (out / "merges.txt").write_text("#version: 0.2\n", encoding="utf-8")
    end = "<|endoftext|>"
    tokenizer = WhisperTokenizer(
        vocab_file=str(out / "vocab.json"),
        merges_file=str(out / "merges.txt"),
        unk_token=end,
        bos_token=end,
        eos_token=end,
        pad_token=end,
    )
    languages = [f"<|{code}|>" for code in LANGUAGES]
    tasks = ["<|translate|>", "<|transcribe|>"]
    others = ["<|startoflm|>", "<|startofprev|>", "<|nocaptions|>", "<|notimestamps|>"]
    start = "<|startoftranscript|>"
    tokenizer.add_special_tokens(
        {"additional_special_tokens": [start, *languages, *tasks, *others]}
    )
    ids = {
        token: tokenizer.convert_tokens_to_ids(token)
        for token in [end, start, *languages, *tasks, *others]
    }
    WhisperProcessor(
        feature_extractor=WhisperFeatureExtractor(feature_size=80), tokenizer=tokenizer
    ).save_pretrained(str(out))
    config = WhisperConfig(
        vocab_size=len(tokenizer),
        num_mel_bins=80,
        d_model=64,
        encoder_layers=1,
        decoder_layers=1,
        encoder_attention_heads=2,
        decoder_attention_heads=2,
        encoder_ffn_dim=128,
        decoder_ffn_dim=128,
        max_source_positions=1500,
        max_target_positions=448,
        decoder_start_token_id=ids[start],
        bos_token_id=ids[end],
        eos_token_id=ids[end],
        pad_token_id=ids[end],
        torch_dtype="float32",
    )
    torch.manual_seed(0)
    model = WhisperForConditionalGeneration(config)
    model.generation_config = GenerationConfig(
        decoder_start_token_id=ids[start],
        bos_token_id=ids[end],
        eos_token_id=ids[end],
        pad_token_id=ids[end],
        is_multilingual=True,
        lang_to_id={token: ids[token] for token in languages},
        task_to_id={"translate": ids["<|translate|>"], "transcribe": ids["<|transcribe|>"]},
        no_timestamps_token_id=ids["<|notimestamps|>"],
        max_length=448,
    )
    model.save_pretrained(str(out), safe_serialization=True)


if __name__ == "__main__":
    if sys.argv[1] == "--cross-encoder":
        cross_encoder(Path(sys.argv[2]))
    elif sys.argv[1] == "--whisper":
        whisper(Path(sys.argv[2]))
    else:
        main(Path(sys.argv[1]))
