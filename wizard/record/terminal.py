"""Text from outside (a server's messages, log lines, config values, answers, transcripts from
another machine) made inert for a terminal.

A terminal obeys what it is sent: ANSI/OSC escape sequences recolour, retitle, rewrite or hide
what the engineer sees (an OSC 8 link can even point somewhere else than it reads), and a carriage
return overwrites the start of a line. ``printable`` drops every such sequence whole, and every
other C0/C1 control character, keeping tab and newline. rich's own ``Text`` removes only a few
(BEL, BS, VT, FF, CR) and passes ESC through, so the rich layer (``render.SafeConsole``) applies
this to every segment it prints.
"""

from __future__ import annotations

import re

# ESC or its 8-bit form, then: CSI parameters and a final byte; OSC/DCS/SOS/PM/APC strings up to
# their terminator (BEL or ST), or to the end when unterminated; or any one character after ESC.
_SEQUENCE = re.compile(
    r"(?:\x1b\[|\x9b)[0-?]*[ -/]*[@-~]?"
    r"|(?:\x1b[\]PX^_]|[\x90\x98\x9d\x9e\x9f])[^\x07\x1b\x9c]*(?:\x07|\x1b\\|\x9c)?"
    r"|\x1b[\s\S]?"
)
_CONTROL = re.compile(r"[\x00-\x08\x0b-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """``text`` without control sequences and control characters (tab and newline stay)."""
    if _CONTROL.search(text) is None:  # the common case costs one scan
        return text
    return _CONTROL.sub("", _SEQUENCE.sub("", text))
