"""A transcript is data, never authority (``resume`` and ``replay --rerun``).

A transcript can be edited and its hash chain rebuilt, so the URLs it names are not where the
user asked requests to go. Before a command sends anything to a URL it read from a transcript,
that URL is shown; unless the user named it on this command line (``--target``, ``--proxy``,
``--replica``) the command asks at a terminal, and refuses without one (``--auto``,
``--answers``, a pipe), in one line saying which flag confirms it. The API key goes only to URLs
named on the command line: a URL confirmed at the prompt is reached without it.
"""

from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path


@dataclass(frozen=True)
class Unnamed:
    """A URL the transcript names and this command line did not, with the flag that names it."""

    flag: str
    url: str


def confirm(
    unnamed: list[Unnamed], path: Path, lang: str, interactive: bool, has_key: bool
) -> bool:
    """Show the URLs only the transcript names, and have them confirmed (see the module).

    Returns whether the API key may be sent (nothing was left unnamed); raises a one-line
    UsageError when they cannot be confirmed here, WizardError when the user declines."""
    from wizard.errors import UsageError, WizardError
    from wizard.i18n.words import say

    if not unnamed:
        return True
    from wizard.auth import without_userinfo

    urls = ", ".join(without_userinfo(u.url) for u in unnamed)
    flags = " ".join(f"{u.flag} {without_userinfo(u.url)}" for u in unnamed)
    if not interactive:
        raise UsageError.said("authority.refused", path=path, urls=urls, flags=flags)
    for one in unnamed:
        shown = without_userinfo(one.url)
        print(say("authority.shown", lang, path=path, flag=one.flag, url=shown), file=sys.stderr)
    if not _ask(say("authority.ask", lang, urls=urls), lang):
        raise WizardError.said("authority.declined", urls=urls)
    if has_key:
        print(say("authority.no_key", lang, urls=urls, flags=flags), file=sys.stderr)
    return False


def at_terminal(*, auto: bool = False, answers: str | None = None) -> bool:
    """Whether a question may be asked: a terminal, and no --auto or --answers standing in."""
    return not auto and not answers and sys.stdin.isatty()


def _ask(text: str, lang: str) -> bool:
    from wizard.ui import aio, prompts

    # No default Yes: where requests go is answered on purpose (a whole word; Enter is no).
    return aio.run(prompts.yes_no(text, False, lang))
