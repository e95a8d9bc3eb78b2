"""Text from a server made safe for a terminal: every control character shown, none obeyed.

A server's error message, model id or `/metrics` body can carry escape sequences that a
terminal would act on: OSC 52 writes the clipboard, OSC 0 the window title, CSI 2J clears the
screen, SGR colours can paint a fake "VALID RUN". Before such text is printed, each control
character (C0, DEL, C1), each bidirectional override, the line and paragraph separators and any
lone surrogate is replaced by its escape (`\\x1b`, `\\u202e`), so the evidence stays readable and
nothing is executed. Files keep the exact text: JSON escapes it there.
"""

from __future__ import annotations

import re
from typing import Final

# Every character a terminal obeys but the line feed (\x0a), as a character class's body.
_OBEYED: Final = (
    "\x00-\x09\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u2028\u2029\u202a-\u202e\u2066-\u2069"
    "\ufeff\ud800-\udfff"
)
_UNPRINTABLE: Final = re.compile(f"[\x0a{_OBEYED}]")
_UNPRINTABLE_BUT_NEWLINE: Final = re.compile(f"[{_OBEYED}]")


def printable(text: str, *, newlines: bool = False) -> str:
    """`text` with every character a terminal would obey shown as its escape instead.

    With `newlines`, a line feed stays (for a message of several lines of assay's own).

    >>> printable("\\x1b]52;c;ZXZpbA==\\x07ok\\x00\\u202e")
    '\\\\x1b]52;c;ZXZpbA==\\\\x07ok\\\\x00\\\\u202e'
    >>> printable("a\\nb"), printable("a\\nb", newlines=True)
    ('a\\\\x0ab', 'a\\nb')
    """
    pattern = _UNPRINTABLE_BUT_NEWLINE if newlines else _UNPRINTABLE
    return pattern.sub(_escape, text)


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code < 0x100 else f"\\u{code:04x}"


__all__ = ["printable"]
