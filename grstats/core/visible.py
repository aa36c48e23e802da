"""Untrusted text made safe to print: control characters shown as escapes.

Strategy: one rule for every place a person reads text from the bus or a
server -- the CLI's tables, the `--explain` texts (`grstats.core.explain`),
the live page. C0 and C1 controls, DEL, and the characters that reorder or
break lines on a terminal (bidi marks, embeddings, overrides, isolates, LINE
and PARAGRAPH SEPARATOR) print as `\\x1b` / `\\u202e`, so a member's host,
state or version cannot move the cursor, clear or recolour a terminal.
"""

from __future__ import annotations

import re

__all__ = ["visible"]

_CONTROL = re.compile("[\x00-\x1f\x7f-\x9f\u200e\u200f\u2028-\u202e\u2066-\u2069]")


def _escape(match: re.Match[str]) -> str:
    code = ord(match.group())
    return f"\\x{code:02x}" if code <= 0xFF else f"\\u{code:04x}"


def visible(text: str) -> str:
    """`text` with every control character shown as an escape (`\\x1b`, `\\u202e`).

    Args:
        text: untrusted text.

    Returns:
        Text that prints as itself: nothing in it acts on a terminal.
    """
    return _CONTROL.sub(_escape, text)
