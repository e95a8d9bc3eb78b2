"""The most a data file, a config or a flag may ask of one run, checked before any load.

A row of a data file is input like any other: `input_length: 10000000000` would have assay
build a 40 GB prompt before sending anything. Each size a request can be asked to have is
bounded here, far above what any model serves today, so a real workload never meets a limit
and a hostile or mistyped one is refused up front with one `error:` line naming the row.
docs/security.md lists them; where the server names its model's context window, the run also
refuses a request that cannot fit in it.
"""

from __future__ import annotations

from typing import Final

MAX_TOKENS_PER_REQUEST: Final = 1 << 21
"""Prompt or output tokens one request may ask for (2,097,152): any token count, a trace row's
`input_length` and `output_length`, a prompt row's `output_tokens`, `--trace-block-tokens`."""
MAX_CONTEXT_WINDOW: Final = 1 << 32
"""The largest context window `--context-window` may state (4,294,967,296 tokens)."""
MAX_HASH_IDS: Final = 1 << 16
"""Hash blocks one trace row may name (65,536; at 512 tokens a block, 32 M tokens)."""
MAX_TURNS: Final = 1 << 10
"""User turns in one session (1,024): `--turns`, or a data row's `turns` list."""
MAX_DATA_FILE_BYTES: Final = 1 << 30
"""The size of a prompt, dataset or trace file (1 GiB; the 642 MB ShareGPT file fits)."""

MAX_IMAGES_PER_REQUEST: Final = 256
"""Images one request may carry (`--images`, every value of its distribution; a data row)."""
MAX_IMAGE_PIXELS_PER_REQUEST: Final = 1 << 25
"""Pixels of the synthetic images of one request together (33,554,432: two 4096x4096), so one
request builds in about a second and a run stays interruptible while it builds."""
MAX_IMAGE_FILE_BYTES: Final = 1 << 25
"""The size of one local image file a data row names (32 MiB), checked before it is read."""
MAX_MEDIA_BYTES_PER_REQUEST: Final = 1 << 26
"""The image bytes of one data row together (64 MiB), as sent (before base64)."""
MAX_AUDIO_SECONDS: Final = 600.0
"""Seconds of synthetic audio one request carries (`--audio-seconds`): ten minutes of 16 kHz
16-bit mono WAV is 19.2 MB (25.6 MB as base64 in a chat part), so a body stays well under the
64 MiB a server commonly reads; 3600 s was 115 MB built per request and ran out of memory."""

MAX_EXTRA_BODY_BYTES: Final = 1 << 24
"""The JSON of `--extra-body` (16 MiB): it is sent with every request, so each request in
flight holds a copy; a larger one would make assay's memory, not the server, the limit."""
ECHOED_FIELD_BYTES: Final = 4096
"""An `--extra-body` value whose JSON is longer is echoed in report.json (and report.html) as
its size and SHA-256, not whole."""

MAX_DURATION_S: Final = 30 * 24 * 3600.0
"""The longest any duration (a step, a deadline, a warmup) may be: 30 days."""
MIN_RATE: Final = 0.001
"""The slowest rate, one request every 1,000 s: below it a step sends nothing in its time."""
MAX_RATE: Final = 1_000_000.0
"""The fastest rate, far above what one client machine can send."""
MIN_BURSTINESS: Final = 0.01
"""The burstiest gamma shape (`--burstiness`): gaps with a coefficient of variation of 10. Far
below it the draw is 0 or astronomically large (at 1e-300 a gap of 1e290 s; at 5e-324 not a
number), and the schedule never ends."""
MAX_BURSTINESS: Final = 1000.0
"""The evenest gamma shape: gaps within a few per cent of the mean, as even as constant."""

__all__ = [
    "MAX_AUDIO_SECONDS",
    "ECHOED_FIELD_BYTES",
    "MAX_BURSTINESS",
    "MAX_CONTEXT_WINDOW",
    "MAX_DURATION_S",
    "MAX_RATE",
    "MIN_BURSTINESS",
    "MIN_RATE",
    "MAX_DATA_FILE_BYTES",
    "MAX_EXTRA_BODY_BYTES",
    "MAX_HASH_IDS",
    "MAX_IMAGES_PER_REQUEST",
    "MAX_IMAGE_FILE_BYTES",
    "MAX_IMAGE_PIXELS_PER_REQUEST",
    "MAX_MEDIA_BYTES_PER_REQUEST",
    "MAX_TOKENS_PER_REQUEST",
    "MAX_TURNS",
]
