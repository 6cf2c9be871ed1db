"""A walk's state (facts, answers, findings, measurements, changes) and the notes it records."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from wizard.i18n.words import texts
from wizard.playbook import Playbook, ProbeCall
from wizard.probes.runner import ProbeContext
from wizard.record.transcript import TranscriptWriter
from wizard.walk import budget
from wizard.walk.operator import Operator


def visited_key(node_id: str) -> str:
    """Node ids contain dots, fact paths split on them: ``nginx.buffering`` -> ``nginx_buffering``."""
    return node_id.replace(".", "_")


@dataclass
class Session:
    """Everything one walk accumulates."""

    playbook: Playbook
    ctx: ProbeContext
    operator: Operator
    writer: TranscriptWriter
    lang: str = "en"
    on_event: Callable[[dict[str, Any]], None] = lambda event: None
    # The probe call running now ({probe, round, params}; None when it is done); never recorded.
    on_busy: Callable[[dict[str, Any] | None], None] = lambda call: None
    facts: dict[str, Any] = field(default_factory=dict)
    answers: dict[str, Any] = field(default_factory=dict)
    findings: list[dict[str, Any]] = field(default_factory=list)
    measurements: list[dict[str, Any]] = field(default_factory=list)
    changes: list[dict[str, Any]] = field(default_factory=list)
    comparisons: list[dict[str, Any]] = field(default_factory=list)
    verdicts: list[dict[str, Any]] = field(default_factory=list)
    # Rules that turned on a contended client's timing or an unstable baseline, by code.
    inconclusive: dict[str, dict[str, Any]] = field(default_factory=dict)
    # Rounds whose A/A repeat disagreed with them: {round: {"repeat": as, "moved": {...}}}.
    unstable: dict[str, dict[str, Any]] = field(default_factory=dict)
    last_measure: dict[str, tuple[ProbeCall, dict[str, Any]]] = field(default_factory=dict)
    # How many changes had been made when each load round (measure, validate) last succeeded: a
    # round walked again that no change since can have touched is not measured again.
    ran_after: dict[str, int] = field(default_factory=dict)
    # The stage being walked, and how many findings came before it (its PASS line counts the rest).
    stage: str | None = None
    stage_start: int = 0
    stage_errors: int = 0  # probes of this stage that failed (a stage with one did not pass)
    stage_unjudged: int = 0  # rules inconclusive before this stage (one said in it did not pass)
    limits: budget.Limits | None = None  # --max-requests and --deadline (run); None: no limits

    def enter_stage(self, stage: str) -> None:
        """A node of ``stage`` is entered: a new stage starts when it differs from the last."""
        if stage != self.stage:
            self.stage, self.stage_start, self.stage_errors = stage, len(self.findings), 0
            self.stage_unjudged = len(self.inconclusive)

    def record(self, kind: str, node: str | None, data: dict[str, Any]) -> dict[str, Any]:
        """Write an event and show it."""
        event = self.writer.append(kind, node, data)
        self.on_event(event)
        return event


def note(session: Session, node_id: str, key: str, **values: Any) -> None:
    """A note of the walk: its English text, and the same in every language the wording has."""
    said = texts(key, **values)
    session.record("note", node_id, {"text": said["en"], "texts": said})
