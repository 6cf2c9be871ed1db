"""Terminal prompts that read only what was typed for them.

A walk runs for minutes between two questions; keys pressed meanwhile (an Enter to "wake" the
screen, the rest of a word) must not answer the next question unseen. So before each question
the terminal's pending input is discarded (``tcflush``), and so are the keys prompt_toolkit read
past the end of the previous answer (its "typeahead" store, which it hands to the next prompt).
Answers are whole words ended by Enter: questionary's confirm took the first key alone, so ``n``
answered and its Enter answered the next question, and ``maybe`` answered Yes.
"""

from __future__ import annotations

import sys

from wizard.i18n.words import say


def discard_typeahead() -> None:
    """Forget every key typed before the question about to be shown (only on a terminal)."""
    if not sys.stdin.isatty():
        return
    import termios

    from prompt_toolkit.input import create_input
    from prompt_toolkit.input.typeahead import clear_typeahead

    termios.tcflush(sys.stdin.fileno(), termios.TCIFLUSH)
    clear_typeahead(create_input(sys.stdin))


def yes_no_word(typed: str, lang: str) -> bool | None:
    """True or False for a whole yes or no (in English, or in ``lang``), None for anything else."""
    word = typed.strip().lower()
    if word in {"y", "yes", say("confirm.yes", lang)}:
        return True
    if word in {"n", "no", say("confirm.no", lang)}:
        return False
    return None


async def text(question: str, default: str) -> str:
    """A line of text, pre-filled with ``default`` (Enter keeps it)."""
    import questionary

    discard_typeahead()
    return str(await questionary.text(question, default=default).unsafe_ask_async())


async def yes_no(text: str, default: bool | None, lang: str) -> bool:
    """A yes/no question answered by a whole word; Enter alone takes ``default`` when there is
    one (None: an explicit answer is required). Anything else is refused and asked again."""
    import questionary

    key = {True: "confirm.hint_yes", False: "confirm.hint_no", None: "confirm.hint"}[default]
    while True:
        discard_typeahead()
        typed = await questionary.text(text + say(key, lang)).unsafe_ask_async()
        if not typed.strip() and default is not None:
            return default
        answer = yes_no_word(typed, lang)
        if answer is not None:
            return answer
        print(say("confirm.refused", lang))


async def numbered(text: str, choices: list[str], lang: str) -> int:
    """One of ``choices`` by its number (from 1), typed and ended by Enter: no default, so a
    stray Enter answers nothing. Returns the index chosen."""
    import questionary

    listed = "  ".join(f"[{n}] {choice}" for n, choice in enumerate(choices, start=1))
    numbers = [str(n) for n in range(1, len(choices) + 1)]
    hint = say("choose.refused", lang, numbers="/".join(numbers))
    while True:
        discard_typeahead()
        typed = await questionary.text(f"{text}\n  {listed}\n ").unsafe_ask_async()
        if typed.strip() in numbers:
            return numbers.index(typed.strip())
        print(hint)
