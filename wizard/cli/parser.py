"""argparse in the user's language: the parser and formatter every ``latency-wizard`` command is
built with.

argparse says its own words (``usage:``, the section titles, ``-h``'s help, its error lines)
through ``gettext``, which answers from the process's locale and a compiled catalogue, and knows
nothing of ``--lang``. Rather than replace argparse's module globals, the parser is given its
language and says those words itself: the titles and ``-h`` when it is built, ``usage:`` through
its formatter, and an error by matching argparse's English template (``wizard.i18n.words_cli``). In
English it changes nothing: every word is argparse's own.
"""

from __future__ import annotations

import argparse
import re
import sys
from functools import cache, partial
from typing import Any, NoReturn
from unicodedata import east_asian_width

from wizard.i18n.words_cli import argparse_error, said


class WordedFormatter(argparse.HelpFormatter):
    """argparse's formatter, with ``usage:`` in the parser's language; Chinese text is wrapped by
    the columns it takes (two a character) and between any two characters, as it has no spaces
    (textwrap would count one column a character and break only at spaces)."""

    def __init__(self, prog: str, lang: str = "en", **kwargs: Any) -> None:
        super().__init__(prog, **kwargs)
        self.lang = lang

    def add_usage(self, usage: Any, actions: Any, groups: Any, prefix: str | None = None) -> None:
        super().add_usage(
            usage, actions, groups, said("usage", self.lang) if prefix is None else prefix
        )

    def _split_lines(self, text: str, width: int) -> list[str]:
        if self.lang == "en":
            return super()._split_lines(text, width)
        return wrap_wide(" ".join(text.split()), width)

    def _fill_text(self, text: str, width: int, indent: str) -> str:
        if self.lang == "en":
            return super()._fill_text(text, width, indent)
        lines = wrap_wide(" ".join(text.split()), width - len(indent))
        return "\n".join(indent + line for line in lines)


class WordedRawDescriptionFormatter(argparse.RawDescriptionHelpFormatter, WordedFormatter):
    """The same, keeping the description's and epilog's own line breaks (tables, examples)."""


# A wide character (CJK, full-width punctuation) on its own, a run of other non-space characters
# (a word, a flag, a URL), or a run of spaces.
_WIDE = "\u2e80-\ua4cf\uac00-\ud7a3\uf900-\ufaff\ufe30-\ufe4f\uff00-\uff60\uffe0-\uffe6"
_NO_LINE_START = set("，。、；：）」』》？！…")  # stays at the end of the line before


@cache
def _pieces() -> re.Pattern[str]:
    """Compiled on first use: an English --help never needs it."""
    return re.compile(rf"[{_WIDE}]|[^\s{_WIDE}]+|\s+")


def wrap_wide(text: str, width: int) -> list[str]:
    """``text`` in lines of at most ``width`` terminal columns (a word longer than that alone)."""
    lines: list[str] = []
    line, used, space = "", 0, False
    for piece in _pieces().findall(text):
        if piece.isspace():
            space = bool(line)
            continue
        size = sum(2 if east_asian_width(char) in "WF" else 1 for char in piece)
        gap = 1 if space else 0
        if line and used + gap + size > width and piece not in _NO_LINE_START:
            lines.append(line)
            line, used, gap = "", 0, 0
        line += " " * gap + piece
        used += gap + size
        space = False
    return [*lines, line] if line else lines


class WizardParser(argparse.ArgumentParser):
    """An ArgumentParser that speaks ``lang``: its help, its usage and its errors. Its
    sub-commands' parsers speak it too."""

    def __init__(self, lang: str = "en", raw_description: bool = False, **kwargs: Any) -> None:
        formatter = WordedRawDescriptionFormatter if raw_description else WordedFormatter
        super().__init__(formatter_class=partial(formatter, lang=lang), add_help=False, **kwargs)
        self.lang = lang
        self._positionals.title = said("positionals", lang)
        self._optionals.title = said("options", lang)
        self.add_argument("-h", "--help", action="help", default=argparse.SUPPRESS,
                          help=said("help", lang))  # fmt: skip

    def add_subparsers(self, **kwargs: Any) -> Any:
        """Sub-commands whose parsers speak this parser's language."""
        kwargs.setdefault("parser_class", partial(WizardParser, lang=self.lang))
        return super().add_subparsers(**kwargs)

    def error(self, message: str) -> NoReturn:
        """The usage, then one line: ``PROG: error: MESSAGE`` in the parser's language (exit 2)."""
        if self.lang == "en":
            super().error(message)
        self.print_usage(sys.stderr)
        line = said("error", self.lang, prog=self.prog, message=argparse_error(message, self.lang))
        self.exit(2, line + "\n")
