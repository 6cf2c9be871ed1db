"""The operator at a terminal: questionary prompts through ``unsafe_ask_async`` so Ctrl-C reaches
us and the partial transcript is kept; each reads only what was typed for it (``prompts.py``), and a
change is applied only on an explicit answer, never on Enter alone."""

from __future__ import annotations

import asyncio
from typing import Any

from wizard.errors import UsageError
from wizard.i18n.words import say
from wizard.playbook import Finding, Question
from wizard.ui import prompts
from wizard.walk.operator import Applier, Decision, coerce


def _text(value: Any) -> str:
    """A prompt's default: empty for an unknown value (never the word "None")."""
    return "" if value is None else str(value)


class InteractiveOperator:
    """Prompts on the terminal (questionary, via unsafe_ask_async so Ctrl-C is ours)."""

    def __init__(self, applier: Applier | None = None) -> None:
        self.applier = applier

    async def ask(self, question: Question, default: Any, lang: str, known: bool = False) -> Any:
        import questionary

        if known:
            return default
        text = question.text.get(lang) or question.text["en"]
        if question.type == "confirm":
            return await prompts.yes_no(text, bool(default), lang)
        if question.type == "select":
            prompts.discard_typeahead()
            return await questionary.select(
                text, choices=list(question.choices), default=default,
                instruction=say("decide.arrows", lang),
            ).unsafe_ask_async()  # fmt: skip
        while True:
            raw = await prompts.text(text, "" if default is None else str(default))
            try:
                return coerce(question, raw)
            except UsageError as exc:
                print(exc.texts.get(lang, str(exc)))

    async def decide(self, finding: Finding, lang: str) -> Decision:
        change = finding.change
        if change is None:
            return Decision(applied=False, note="no change proposed")
        can_auto = self.applier is not None and self.applier.can_apply(change)
        # It applies a change (or records one made by hand): only an explicit answer does, a
        # number typed for it; Enter alone answers nothing (prompts.numbered).
        skip, by_hand, for_me = (say(f"decide.{k}", lang) for k in ("skip", "by_hand", "for_me"))
        choices = [for_me, skip, by_hand] if can_auto else [skip, by_hand]
        prompt = say("decide.prompt", lang, code=finding.code, apply=change["apply"], layer=change["layer"],
                     parameter=change["parameter"])  # fmt: skip
        action = choices[await prompts.numbered(prompt, choices, lang)]
        if action == skip:
            return Decision(applied=False, note="skipped by the operator")
        if action == for_me and self.applier is not None:
            return await asyncio.to_thread(self.applier.apply, change)
        # What was changed by hand: filled in from the proposal, Enter keeps it.
        parameter = await prompts.text(say("decide.which", lang), str(change["parameter"]))
        before = await prompts.text(say("decide.before", lang), _text(change.get("before")))
        after = await prompts.text(say("decide.after", lang), _text(change.get("after")))
        restarted = await prompts.yes_no(
            say("decide.restarted", lang), change["layer"] == "vllm", lang
        )
        return Decision(applied=True, layer=str(change["layer"]), parameter=parameter, before=before,
                        after=after, note="applied by the operator", restarted=restarted)  # fmt: skip
