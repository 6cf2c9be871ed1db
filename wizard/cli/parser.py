"""argparse in the user's language: the parser and formatter every ``latency-wizard`` command is
built with.

argparse says its own words (``usage:``, the section titles, ``-h``'s help, its error lines)
through gettext's global functions, which answer from the text domain set for the process and the
language its environment names (``LANGUAGE`` first), and know nothing of ``--lang``. So while a
parser of another language is built, parses or prints, gettext's domain is the wizard's catalog
(``wizard.i18n.catalog``) and ``LANGUAGE`` is the parser's; both are put back after. In English
nothing is touched: every word is argparse's own, in whatever language the user's locale gives it.
"""

from __future__ import annotations

import argparse
import gettext
import os
import re
from collections.abc import Iterator
from contextlib import contextmanager
from functools import cache, partial
from typing import Any, NoReturn
from unicodedata import east_asian_width

from wizard.i18n.catalog import DOMAIN, LOCALE_DIR


@contextmanager
def speaking(lang: str) -> Iterator[None]:
    """argparse's words in ``lang`` while inside: gettext's domain is the wizard's catalog and
    ``LANGUAGE`` names ``lang`` (English: nothing changed)."""
    if lang == "en":
        yield
        return
    domain, language = gettext.textdomain(), os.environ.get("LANGUAGE")
    gettext.bindtextdomain(DOMAIN, str(LOCALE_DIR))
    gettext.textdomain(DOMAIN)
    os.environ["LANGUAGE"] = lang
    try:
        yield
    finally:
        gettext.textdomain(domain)
        if language is None:
            del os.environ["LANGUAGE"]
        else:
            os.environ["LANGUAGE"] = language


class WordedFormatter(argparse.HelpFormatter):
    """argparse's formatter for a parser's language: Chinese text is wrapped by the columns it
    takes (two a character) and between any two characters, as it has no spaces (textwrap would
    count one column a character and break only at spaces)."""

    def __init__(self, prog: str, lang: str = "en", **kwargs: Any) -> None:
        super().__init__(prog, **kwargs)
        self.lang = lang

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
        self.lang = lang
        with speaking(lang):  # the section titles and -h's help are worded here
            super().__init__(formatter_class=partial(formatter, lang=lang), **kwargs)

    def add_subparsers(self, **kwargs: Any) -> Any:
        """Sub-commands whose parsers speak this parser's language."""
        kwargs.setdefault("parser_class", partial(WizardParser, lang=self.lang))
        with speaking(self.lang):  # argparse words a titled group of sub-commands here
            return super().add_subparsers(**kwargs)

    def parse_args(self, *args: Any, **kwargs: Any) -> Any:
        """argparse's parsing, its errors and ``-h``'s help in the parser's language (this one
        words "unrecognized arguments" itself, outside ``parse_known_args``)."""
        with speaking(self.lang):
            return super().parse_args(*args, **kwargs)

    def parse_known_args(self, *args: Any, **kwargs: Any) -> Any:
        with speaking(self.lang):
            return super().parse_known_args(*args, **kwargs)

    def format_usage(self) -> str:
        with speaking(self.lang):
            return super().format_usage()

    def format_help(self) -> str:
        with speaking(self.lang):
            return super().format_help()

    def error(self, message: str) -> NoReturn:
        """The usage, then one line: ``PROG: error: MESSAGE`` in the parser's language (exit 2)."""
        with speaking(self.lang):
            super().error(message)
