"""Who answers the walk's questions and decides on proposed changes.

- ``AutoOperator`` (``--auto``): never prompts; takes defaults and applies a change only through an
  applier that can do it safely (the demo restarts its own simulator or nginx).
- ``ScriptedOperator`` (``--answers FILE``): YAML keyed by question id, plus decisions keyed by
  finding code; an id the playbook does not know is an error.
- ``InteractiveOperator`` (``wizard/ui/interactive.py``): the terminal's prompts.
The engine knows none of them by name; it calls ``ask`` and ``decide``.
"""

from __future__ import annotations

import asyncio
import math
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

import yaml

from wizard.errors import UsageError
from wizard.files import MIB, read_bytes
from wizard.i18n.words import texts
from wizard.numbers import MAX_DIGITS, parse_float
from wizard.playbook import Finding, Playbook, Question
from wizard.playbook.yamlines import YamlBoundError, located, safe_load


@dataclass(frozen=True)
class Decision:
    """What the operator did about a proposed change."""

    applied: bool
    layer: str = ""
    parameter: str = ""
    before: str | None = None
    after: str | None = None
    note: str = ""
    restarted: bool = False  # the server restarted: the next measurement starts cold


class Applier(Protocol):
    """Applies a change to a system the wizard owns (the demo's simulator or nginx)."""

    def can_apply(self, change: dict[str, Any]) -> bool: ...

    def apply(self, change: dict[str, Any]) -> Decision: ...


class Operator(Protocol):
    # ``known``: the evidence answers the question (``default`` is its value); a person is not
    # asked, an answers file may still say otherwise.
    async def ask(
        self, question: Question, default: Any, lang: str, known: bool = False
    ) -> Any: ...

    async def decide(self, finding: Finding, lang: str) -> Decision: ...


def coerce(question: Question, value: Any) -> Any:
    """Check and convert an answer to the question's type; raise UsageError when it does not fit."""
    # The value given is never echoed: a hurried paste into the wrong key may be a secret.
    if question.type == "number":
        number = _number(value)
        if number is None:
            raise UsageError.said("error.answer_number", id=question.id, kind=_kind(value))
        # Every number the playbook asks is a count (GPUs, cores, nodes) or a timeout.
        if number < 0:
            raise UsageError.said("error.answer_negative", id=question.id)
        return int(number) if number.is_integer() else number
    if question.type == "confirm":
        if isinstance(value, bool):
            return value
        if str(value).lower() in ("yes", "y", "true", "1"):
            return True
        if str(value).lower() in ("no", "n", "false", "0"):
            return False
        raise UsageError.said("error.answer_yes_no", id=question.id, kind=_kind(value))
    if question.type == "select" and str(value) not in question.choices:
        raise UsageError.said("error.answer_choice", id=question.id,
                              choices=", ".join(question.choices), kind=_kind(value))  # fmt: skip
    return value if question.type != "text" else str(value)


def _number(value: Any) -> float | None:
    """A finite number from an int, a float or its text; None for anything else."""
    if isinstance(value, bool):
        return None
    if isinstance(value, int):
        return float(value) if abs(value) < 10**MAX_DIGITS else None
    if isinstance(value, float):
        return value if math.isfinite(value) else None
    return parse_float(value.strip()) if isinstance(value, str) else None


def _kind(value: Any) -> dict[str, str]:
    """What was given, without the value itself, in every language."""
    if isinstance(value, str):
        return texts("answer_kind.text", n=len(value))
    return (
        texts("answer_kind.nothing")
        if value is None
        else texts("answer_kind.other", type=type(value).__name__)
    )


class AutoOperator:
    """Evidence and defaults only; never prompts."""

    def __init__(self, applier: Applier | None = None) -> None:
        self.applier = applier

    async def ask(self, question: Question, default: Any, lang: str, known: bool = False) -> Any:
        return default

    async def decide(self, finding: Finding, lang: str) -> Decision:
        change = finding.change
        if change is None:
            return Decision(applied=False, note="no change proposed")
        if self.applier is not None and self.applier.can_apply(change):
            return await asyncio.to_thread(self.applier.apply, change)
        return Decision(
            applied=False,
            note="auto mode proposes changes; it applies none to systems it does not own",
        )


# What a question id or a finding code looks like; any other key is not echoed.
MAX_ANSWERS_BYTES = MIB  # an answers file is a few dozen lines
ID_LIKE = re.compile(r"[a-z][a-z0-9_]{0,63}|LAT\d{3}")


def _shown_key(key: Any) -> dict[str, str] | str:
    """An unknown key as an error may show it: quoted when it looks like an id (a typo to fix),
    else only its length: a hurried paste may have put a secret where a key goes."""
    if isinstance(key, str) and ID_LIKE.fullmatch(key):
        return f"'{key}'"
    return texts("answer_kind.secret_key", n=len(str(key)))


class ScriptedOperator:
    """Answers and decisions from a YAML file."""

    def __init__(self, answers: dict[str, Any], applier: Applier | None = None) -> None:
        self.answers = answers
        self.applier = applier

    @classmethod
    def from_file(
        cls, path: Path, playbook: Playbook, applier: Applier | None = None
    ) -> ScriptedOperator:
        """Load and check an answers file against the playbook."""
        try:
            data = safe_load(read_bytes(path, MAX_ANSWERS_BYTES).decode("utf-8"))
        except YamlBoundError as exc:
            said = located(path, exc.line, exc.texts)
            raise UsageError(said["en"], said) from None
        except OSError as exc:
            raise UsageError.os_said("error.answers_unreadable", exc, path=path) from None
        except UnicodeDecodeError as exc:
            raise UsageError.said("error.not_utf8", path=path, byte=exc.start) from None
        except ValueError:
            # PyYAML's constructors raise plain ValueError for values it recognised but cannot
            # build, such as the date 2024-13-45.
            raise UsageError.said("error.answers_value", path=path) from None
        except yaml.YAMLError as exc:
            mark = getattr(exc, "problem_mark", None)
            where = f":{mark.line + 1}" if mark is not None else ""
            raise UsageError.said("error.answers_yaml", path=f"{path}{where}") from None
        if data is None:
            data = {}
        if not isinstance(data, dict):
            raise UsageError.said("error.answers_not_mapping", path=path)
        questions = {q.id: q for node in playbook.nodes.values() for q in node.ask}
        for key, value in data.items():
            if key in playbook.findings:
                if value not in ("apply", "skip") and not isinstance(value, dict):
                    raise UsageError.said("error.answers_decision", path=path, code=key)
            elif key in questions:
                try:
                    coerce(questions[key], value)
                except UsageError as exc:
                    raise UsageError.said("error.in_file", path=path, message=exc.texts) from None
            else:
                raise UsageError.said("error.answers_unknown", path=path, given=_shown_key(key))
        return cls(data, applier)

    async def ask(self, question: Question, default: Any, lang: str, known: bool = False) -> Any:
        return self.answers.get(question.id, default)

    async def decide(self, finding: Finding, lang: str) -> Decision:
        choice = self.answers.get(finding.code, "skip")
        change = finding.change or {}
        if choice == "skip" or not change:
            return Decision(applied=False, note="skipped by the answers file")
        if choice == "apply" and self.applier is not None and self.applier.can_apply(change):
            return await asyncio.to_thread(self.applier.apply, change)
        if isinstance(choice, dict):
            return Decision(
                applied=True, layer=str(choice.get("layer", change.get("layer", ""))),
                parameter=str(choice.get("parameter", change.get("parameter", ""))),
                # What the file leaves out is the proposal's: its value before comes from the
                # evidence (the log, /metrics, the config), never left blank.
                before=_str(choice.get("before", change.get("before"))),
                after=_str(choice.get("after", change.get("after"))),
                note="applied by the operator (answers file)",
                restarted=bool(choice.get("restarted", False)),
            )  # fmt: skip
        return Decision(applied=False, note="nothing here can apply this change")


def _str(value: Any) -> str | None:
    return None if value is None else str(value)
