"""The playbook (this module: the loader), its conditions, YAML with line numbers and the fixed
vocabularies. May load errors, files, i18n, levers (change computers) and the probe registry;
never ui, report, walk or cli.

The playbook: the procedure as data, loaded into a graph of its nodes and validated.

A playbook YAML has ``id``, ``version``, ordered ``stages``, ``start``, ``nodes`` and ``findings``
(docs/playbook.md describes every field). ``load`` returns a ``Playbook`` or raises
``PlaybookError`` listing every problem as ``file:line: message``.
"""

from __future__ import annotations

import graphlib
import hashlib
import re
from collections import deque
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from wizard.errors import WizardError
from wizard.files import read_bytes
from wizard.playbook import conditions
from wizard.playbook.vocabulary import CAUSES, LANGUAGES, LAYERS, PROCEDURE_ITEMS, SEVERITIES
from wizard.playbook.yamlines import Path_, YamlError, line_of, load_with_lines, located

END = "end"
# A finding's `remeasure` for a cause that kept the server from starting: no round can be repeated,
# the start itself is (judged by the node with `judge_start`).
START = "start"
CODE = re.compile(r"^LAT\d{3}$")
QUESTION_TYPES = ("text", "number", "select", "confirm")
MAX_PLAYBOOK_BYTES = 16 * 1024 * 1024  # the shipped playbook is 125 KB
DEFAULT_PLAYBOOK = Path(__file__).resolve().parent / "vllm-latency.yaml"

Text = dict[str, str]


@dataclass(frozen=True)
class Question:
    id: str
    type: str
    text: Text
    choices: tuple[str, ...] = ()
    default: Any = None
    default_facts: tuple[str, ...] = ()  # the first of these facts that is known wins
    when: Any = True
    # Facts among default_facts that only suggest the answer: the operator is asked to confirm
    # (the others answer the question, which is then shown and not asked).
    confirm_facts: tuple[str, ...] = ()


@dataclass(frozen=True)
class ProbeCall:
    name: str
    as_: str
    params: dict[str, Any]
    when: Any = True
    acts_on: tuple[str, ...] = ()  # procedure items this probe carries out (not only explains)
    skipped: Text | None = None  # why it does not run when its condition does not hold


@dataclass(frozen=True)
class Rule:
    when: Any
    finding: str


@dataclass(frozen=True)
class Edge:
    to: str
    when: Any = True
    loop: bool = False


@dataclass(frozen=True)
class Node:
    id: str
    stage: str
    title: Text
    explain: Text
    covers: tuple[str, ...]
    measure: bool = False
    ask: tuple[Question, ...] = ()
    probes: tuple[ProbeCall, ...] = ()
    rules: tuple[Rule, ...] = ()
    next: tuple[Edge, ...] = ()
    # Before this node's own work, every rule of the playbook is evaluated again over all the
    # evidence gathered, so that a finding does not depend on the route (its node ran before its
    # evidence existed, or was skipped).
    sweep: bool = False
    # When this condition holds after the node's probes, the server now answers after a failed
    # start: every change made to start it (its finding's `remeasure: start`) is judged, from its
    # answer and its log read again.
    judge_start: Any = False
    thresholds: tuple[Threshold, ...] = ()  # the numbers its edges compare with


@dataclass(frozen=True)
class Threshold:
    """One number a condition compares with, and where it comes from (docs/findings.md)."""

    at: str  # the fact (or answers.ID) compared
    value: float | str  # a number, or the measured figure it is compared with
    source: Text


@dataclass(frozen=True)
class Finding:
    code: str
    cause: str
    severity: str
    title: Text
    advice: Text
    evidence: Text  # English always; a zh text where the playbook gives one
    change: dict[str, Any] | None
    docs: tuple[str, ...]
    remeasure: str | None = None  # which measurement (a probe's `as`) to repeat after the change
    # How to tell, from the cause's own evidence in the repeated round, that it is gone; and the
    # segments the finding predicts will look worse after the fix (a trade-off, not a regression).
    gone: Any = None
    gone_evidence: Text = field(default_factory=dict)
    expected_worse: tuple[str, ...] = ()
    acts_on: tuple[str, ...] = ()  # procedure items this finding's rule carries out
    thresholds: tuple[Threshold, ...] = ()


@dataclass
class Playbook:
    id: str
    version: int
    stages: tuple[str, ...]
    start: str
    nodes: dict[str, Node]
    findings: dict[str, Finding]
    sha256: str
    path: str
    # Each node's successors (``end`` included), filled by validation.
    successors: dict[str, set[str]] = field(default_factory=dict)


class PlaybookError(WizardError):
    """Every problem found in a playbook, one ``file:line: message`` per line."""

    def __init__(self, problems: list[str], texts: dict[str, str] | None = None) -> None:
        super().__init__("\n".join(problems), texts)
        self.problems = problems


class _Collector:
    def __init__(self, path: str, lines: dict[Path_, int]) -> None:
        self.path = path
        self.lines = lines
        self.problems: list[str] = []

    def add(self, where: Path_, message: str) -> None:
        line = line_of(self.lines, where)
        self.problems.append(f"{self.path}:{line or 1}: {message}")


def load(path: Path | str = DEFAULT_PLAYBOOK) -> Playbook:
    """Read, parse and validate a playbook; raise PlaybookError with every problem."""
    path = Path(path)
    try:
        raw = read_bytes(path, MAX_PLAYBOOK_BYTES)
    except OSError as exc:
        raise PlaybookError([f"{path}: cannot read: {exc.strerror}"]) from None
    try:
        data, lines = load_with_lines(raw.decode("utf-8"))
    except UnicodeDecodeError:
        raise PlaybookError([f"{path}:1: not UTF-8 text"]) from None
    except YamlError as exc:
        said = located(path, exc.line, exc.texts)
        raise PlaybookError([said["en"]], said) from None
    errors = _Collector(str(path), lines)
    playbook = _parse(data, errors, hashlib.sha256(raw).hexdigest(), str(path))
    if playbook is not None:
        _validate_graph(playbook, errors)
    if errors.problems:
        raise PlaybookError(errors.problems)
    assert playbook is not None
    return playbook


# -- parsing ----------------------------------------------------------------------------------


def _parse(data: Any, errors: _Collector, sha256: str, path: str) -> Playbook | None:
    if not isinstance(data, dict):
        errors.add(
            (), "a playbook must be a mapping with id, version, stages, start, nodes, findings"
        )
        return None
    for key in ("id", "version", "stages", "start", "nodes", "findings"):
        if key not in data:
            errors.add((), f"missing top-level key '{key}'")
    if errors.problems:
        return None
    stages = data["stages"]
    if not isinstance(stages, list) or not all(isinstance(s, str) for s in stages) or not stages:
        errors.add(("stages",), "stages must be a non-empty list of names")
        stages = []
    findings = {}
    if isinstance(data["findings"], dict):
        for code, body in data["findings"].items():
            finding = _finding(code, body, ("findings", code), errors)
            if finding is not None:
                findings[code] = finding
    else:
        errors.add(("findings",), "findings must be a mapping of LAT### codes")
    nodes = {}
    if isinstance(data["nodes"], dict):
        for node_id, body in data["nodes"].items():
            node = _node(node_id, body, ("nodes", node_id), errors)
            if node is not None:
                nodes[node_id] = node
    else:
        errors.add(("nodes",), "nodes must be a mapping of node ids")
    return Playbook(
        id=str(data["id"]), version=int(data["version"]) if str(data["version"]).isdigit() else 0,
        stages=tuple(stages), start=str(data["start"]), nodes=nodes, findings=findings,
        sha256=sha256, path=path,
    )  # fmt: skip


def _paths(value: Any) -> tuple[str, ...]:
    """``default_fact`` is one fact path or a list of them."""
    if value is None:
        return ()
    return tuple(str(v) for v in value) if isinstance(value, list) else (str(value),)


def _items(value: Any, where: Path_, errors: _Collector) -> tuple[str, ...]:
    """An ``acts_on`` list: procedure ids (shared/seed/procedure.md)."""
    if not isinstance(value, list):
        errors.add(where, "acts_on must be a list of procedure ids")
        return ()
    for item in value:
        if item not in PROCEDURE_ITEMS:
            errors.add(where, f"unknown procedure item '{item}' in acts_on")
    return tuple(str(item) for item in value)


def _text(value: Any, where: Path_, errors: _Collector, name: str) -> Text:
    if not isinstance(value, dict):
        errors.add(where, f"{name} must have en and zh texts")
        return {}
    for language in LANGUAGES:
        if not isinstance(value.get(language), str) or not value[language].strip():
            errors.add(where, f"{name} is missing its '{language}' text")
    return {k: _unfolded(str(v)) if k == "zh" else str(v) for k, v in value.items()}


# YAML folds a long text's lines with a space, which Chinese does not put between its characters
# or after its punctuation ("改善了哪 个阶段。 流程依据").
_FOLD_SPACE = re.compile(
    r"(?<=[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]) (?=[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef])"
)


def _unfolded(text: str) -> str:
    return _FOLD_SPACE.sub("", text)


def _template(value: Any) -> Text:
    """An evidence template: one English string, or its ``en`` and ``zh`` texts."""
    if isinstance(value, dict):
        return {str(k): str(v) for k, v in value.items()}
    return {"en": str(value)} if value else {}


def _condition(value: Any, where: Path_, errors: _Collector) -> Any:
    try:
        conditions.check(value)
    except conditions.ConditionError as exc:
        errors.add(where, f"bad condition: {exc}")
        return False
    return value


def _node(node_id: str, body: Any, where: Path_, errors: _Collector) -> Node | None:
    if not isinstance(body, dict):
        errors.add(where, f"node '{node_id}' must be a mapping")
        return None
    known = {
        "stage",
        "title",
        "explain",
        "covers",
        "measure",
        "ask",
        "probes",
        "rules",
        "next",
        "sweep",
        "judge_start",
        "thresholds",
    }
    for key in set(body) - known:
        errors.add((*where, key), f"node '{node_id}': unknown key '{key}'")
    for key in ("stage", "title", "explain"):
        if key not in body:
            errors.add(where, f"node '{node_id}': missing '{key}'")
    covers = body.get("covers", [])
    if not isinstance(covers, list):
        errors.add((*where, "covers"), "covers must be a list of procedure ids")
        covers = []
    questions = []
    for i, q in enumerate(body.get("ask", []) or []):
        qwhere = (*where, "ask", i)
        if not isinstance(q, dict) or "id" not in q or "text" not in q:
            errors.add(qwhere, "a question needs id and text")
            continue
        kind = q.get("type", "text")
        if kind not in QUESTION_TYPES:
            errors.add(
                (*qwhere, "type"), f"question type must be one of {', '.join(QUESTION_TYPES)}"
            )
        choices = tuple(str(c) for c in q.get("choices", []))
        if kind == "select" and not choices:
            errors.add(qwhere, f"select question '{q['id']}' needs choices")
        questions.append(Question(
            str(q["id"]), kind, _text(q["text"], (*qwhere, "text"), errors, f"question '{q['id']}'"),
            choices, q.get("default"), _paths(q.get("default_fact")),
            _condition(q.get("when", True), (*qwhere, "when"), errors),
            _paths(q.get("confirm_fact")),
        ))  # fmt: skip
    probes = []
    for i, p in enumerate(body.get("probes", []) or []):
        pwhere = (*where, "probes", i)
        if not isinstance(p, dict) or "name" not in p:
            errors.add(pwhere, "a probe call needs a name")
            continue
        probes.append(ProbeCall(
            str(p["name"]), str(p.get("as", p["name"])), dict(p.get("params", {}) or {}),
            _condition(p.get("when", True), (*pwhere, "when"), errors),
            _items(p.get("acts_on", []), (*pwhere, "acts_on"), errors),
            _text(p["skipped"], (*pwhere, "skipped"), errors, f"probe {p['name']} skipped")
            if "skipped" in p else None,
        ))  # fmt: skip
    rules = []
    for i, r in enumerate(body.get("rules", []) or []):
        rwhere = (*where, "rules", i)
        if not isinstance(r, dict) or "when" not in r or "finding" not in r:
            errors.add(rwhere, "a rule needs when and finding")
            continue
        rules.append(Rule(_condition(r["when"], (*rwhere, "when"), errors), str(r["finding"])))
    edges = []
    for i, e in enumerate(body.get("next", []) or []):
        ewhere = (*where, "next", i)
        if not isinstance(e, dict) or "to" not in e:
            errors.add(ewhere, "an edge needs 'to'")
            continue
        edges.append(Edge(str(e["to"]), _condition(e.get("when", True), (*ewhere, "when"), errors),
                          bool(e.get("loop", False))))  # fmt: skip
    return Node(
        id=node_id, stage=str(body.get("stage", "")),
        title=_text(body.get("title"), (*where, "title"), errors, f"node '{node_id}' title"),
        explain=_text(body.get("explain"), (*where, "explain"), errors, f"node '{node_id}' explain"),
        covers=tuple(str(c) for c in covers), measure=bool(body.get("measure", False)),
        sweep=bool(body.get("sweep", False)),
        judge_start=_condition(body.get("judge_start", False), (*where, "judge_start"), errors),
        ask=tuple(questions), probes=tuple(probes), rules=tuple(rules), next=tuple(edges),
        thresholds=_thresholds(body.get("thresholds", []), (*where, "thresholds"), errors,
                               f"node '{node_id}'"),
    )  # fmt: skip


def _finding(code: str, body: Any, where: Path_, errors: _Collector) -> Finding | None:
    if not CODE.match(code):
        errors.add(where, f"finding code '{code}' must look like LAT001")
    if not isinstance(body, dict):
        errors.add(where, f"finding {code} must be a mapping")
        return None
    cause = body.get("cause")
    if cause not in CAUSES:
        errors.add((*where, "cause"), f"finding {code}: cause '{cause}' is not in the vocabulary")
    severity = body.get("severity")
    if severity not in SEVERITIES:
        errors.add(
            (*where, "severity"), f"finding {code}: severity must be one of {', '.join(SEVERITIES)}"
        )
    change = body.get("change")
    if change is not None:
        # Loaded here, not with the package: levers and measure load this package's conditions,
        # and the change computers load levers in turn.
        from wizard.levers.changes import COMPUTERS

        if not isinstance(change, dict) or not {"layer", "parameter"} <= set(change):
            errors.add((*where, "change"), f"finding {code}: change needs layer and parameter")
        elif "apply" not in change and "compute" not in change:
            errors.add(
                (*where, "change"),
                f"finding {code}: change needs `apply` (a fixed text) or `compute` (a function "
                "registered in wizard/levers/changes.py that computes it from the server's values)",
            )
        elif "compute" in change and change["compute"] not in COMPUTERS:
            errors.add(
                (*where, "change", "compute"),
                f"finding {code}: unknown compute {change['compute']!r}; known: "
                + ", ".join(sorted(COMPUTERS)),
            )
        elif change["layer"] not in LAYERS:
            errors.add(
                (*where, "change", "layer"),
                f"finding {code}: layer must be one of {', '.join(LAYERS)}",
            )
        elif isinstance(change["parameter"], list) or "," in str(change["parameter"]):
            errors.add(
                (*where, "change", "parameter"),
                f"finding {code}: a change names exactly one parameter",
            )
    if body.get("remeasure") and "gone" not in body:
        errors.add(
            (*where, "gone"),
            f"finding {code}: a finding that re-measures says how its evidence shows it gone "
            "(`gone`: a condition over the repeated round's facts)",
        )
    docs = body.get("docs", [])
    if not isinstance(docs, list) or not docs:
        errors.add((*where, "docs"), f"finding {code}: give at least one upstream doc link")
        docs = []
    return Finding(
        code=code, cause=str(cause), severity=str(severity),
        title=_text(body.get("title"), (*where, "title"), errors, f"finding {code} title"),
        advice=_text(body.get("advice"), (*where, "advice"), errors, f"finding {code} advice"),
        evidence=_template(body.get("evidence", "")), change=change if isinstance(change, dict) else None,
        docs=tuple(str(d) for d in docs),
        remeasure=str(body["remeasure"]) if body.get("remeasure") else None,
        gone=_condition(body["gone"], (*where, "gone"), errors) if "gone" in body else None,
        gone_evidence=_template(body.get("gone_evidence", "")),
        expected_worse=tuple(str(s) for s in body.get("expected_worse", []) or []),
        acts_on=_items(body.get("acts_on", []), (*where, "acts_on"), errors),
        thresholds=_thresholds(body.get("thresholds", []), (*where, "thresholds"), errors,
                               f"finding {code}"),
    )  # fmt: skip


def _thresholds(value: Any, where: Path_, errors: _Collector, owner: str) -> tuple[Threshold, ...]:
    """The ``thresholds`` of a finding (its rules) or a node (its edges): ``{at: FACT, value: N
    or FIGURE, from: {en, zh}}`` each."""
    if not isinstance(value, list):
        errors.add(where, f"{owner}: thresholds must be a list")
        return ()
    found = []
    for index, item in enumerate(value):
        here = (*where, index)
        number = item.get("value") if isinstance(item, dict) else None
        if not isinstance(item, dict) or not isinstance(item.get("at"), str) or isinstance(
            number, bool) or not isinstance(number, int | float | str):  # fmt: skip
            errors.add(here, f"{owner}: a threshold needs `at` (a fact) and a `value` (a number, "
                       "or the measured figure it is compared with)")  # fmt: skip
            continue
        source = _text(item.get("from"), (*here, "from"), errors, f"{owner} threshold source")
        found.append(Threshold(at=item["at"], value=number, source=source))
    return tuple(found)


# -- graph checks ----------------------------------------------------------------------------


def _reachable(successors: dict[str, set[str]], start: str) -> set[str]:
    """Every node a walk from ``start`` can reach, ``start`` included."""
    seen, queue = {start}, deque([start])
    while queue:
        for target in successors.get(queue.popleft(), ()):
            if target not in seen:
                seen.add(target)
                queue.append(target)
    return seen


def _cycles(successors: dict[str, set[str]]) -> list[list[str]]:
    """Cycles of a graph, each as ``[a, b, ..., a]``, until none is left: graphlib names one
    cycle at a time, so each found one loses its closing edge and the search runs again."""
    edges = {node: set(targets) for node, targets in successors.items()}
    found = []
    while True:
        order: graphlib.TopologicalSorter[str] = graphlib.TopologicalSorter()
        for node in sorted(edges):
            order.add(node)
            for target in sorted(edges[node]):
                order.add(target, node)  # graphlib takes predecessors: node comes before target
        try:
            order.prepare()
        except graphlib.CycleError as cycle_error:
            cycle: list[str] = cycle_error.args[1]
            found.append(cycle)
            edges[cycle[-2]].discard(cycle[-1])
        else:
            return found


def _validate_graph(playbook: Playbook, errors: _Collector) -> None:
    from wizard.probes.registry import PROBES  # (as COMPUTERS above: not with the package)

    successors = playbook.successors
    stage_index = {stage: i for i, stage in enumerate(playbook.stages)}
    successors[END] = set()
    for node in playbook.nodes.values():
        where: Path_ = ("nodes", node.id)
        successors[node.id] = set()
        if node.stage not in stage_index:
            errors.add((*where, "stage"), f"node '{node.id}': unknown stage '{node.stage}'")
        for item in node.covers:
            if item not in PROCEDURE_ITEMS:
                errors.add((*where, "covers"), f"node '{node.id}': unknown procedure item '{item}'")
        for i, call in enumerate(node.probes):
            if call.name not in PROBES:
                errors.add(
                    (*where, "probes", i, "name"),
                    f"node '{node.id}': probe '{call.name}' is not registered",
                )
        for i, rule in enumerate(node.rules):
            if rule.finding not in playbook.findings:
                errors.add(
                    (*where, "rules", i, "finding"),
                    f"node '{node.id}': finding {rule.finding} is not defined",
                )
        if not node.next:
            errors.add(where, f"node '{node.id}' has no 'next' (end a walk with 'to: end')")
        for i, edge in enumerate(node.next):
            if edge.to != END and edge.to not in playbook.nodes:
                errors.add(
                    (*where, "next", i), f"node '{node.id}': edge to unknown node '{edge.to}'"
                )
                continue
            successors[node.id].add(edge.to)
            target = playbook.nodes.get(edge.to)
            if target is None or node.stage not in stage_index or target.stage not in stage_index:
                continue
            backwards = stage_index[target.stage] < stage_index[node.stage]
            if backwards and not edge.loop:
                errors.add((*where, "next", i),
                           f"edge {node.id} -> {edge.to} goes back from stage '{node.stage}' to "
                           f"'{target.stage}'; declare it 'loop: true' if it is a re-measure loop")  # fmt: skip
            if edge.loop and not target.measure:
                errors.add((*where, "next", i),
                           f"loop edge {node.id} -> {edge.to} must lead to a measurement node")  # fmt: skip
    if playbook.start not in playbook.nodes:
        errors.add(("start",), f"start node '{playbook.start}' does not exist")
        return
    reachable = _reachable(successors, playbook.start)
    predecessors: dict[str, set[str]] = {node_id: set() for node_id in successors}
    for source, heads in successors.items():
        for head in heads:
            predecessors[head].add(source)
    ending = _reachable(predecessors, END)
    for node_id in playbook.nodes:
        if node_id not in reachable:
            errors.add(
                ("nodes", node_id), f"node '{node_id}' is unreachable from '{playbook.start}'"
            )
        elif node_id not in ending:
            errors.add(("nodes", node_id), f"node '{node_id}' can never reach the end")
    measureless = {n: {t for t in successors[n] if t in playbook.nodes and not playbook.nodes[t].measure}
                   for n, node in playbook.nodes.items() if not node.measure}  # fmt: skip
    for cycle in _cycles(measureless):
        errors.add(("nodes", cycle[0]), f"cycle {' -> '.join(cycle)} has no measurement node")
    if not any(node.judge_start for node in playbook.nodes.values()):
        for code, finding in playbook.findings.items():
            if finding.remeasure == START:
                errors.add(("findings", code, "remeasure"),
                           f"finding {code}: `remeasure: start` needs a node with `judge_start` "
                           "(where the restarted server is judged)")  # fmt: skip
    covered = {item for node in playbook.nodes.values() for item in node.covers}
    missing = [item for item in PROCEDURE_ITEMS if item not in covered]
    if missing:
        errors.add(("nodes",), f"procedure items not covered by any node: {', '.join(missing)}")
    idle = [item for item in PROCEDURE_ITEMS if item not in acted_on(playbook)]
    if idle:
        errors.add(("nodes",), "procedure items no rule, probe or audit acts on (only explained): "
                   + ", ".join(idle))  # fmt: skip


def acted_on(playbook: Playbook) -> dict[str, list[str]]:
    """Each procedure item a rule, a probe or the closing audit carries out, and what does it.

    A finding counts only when some rule raises it, a probe only when a node runs it: naming an
    item in a node's ``covers`` (where it is explained) is not acting on it.
    """
    acting: dict[str, list[str]] = {}
    raised = {rule.finding for node in playbook.nodes.values() for rule in node.rules}
    for code in sorted(raised & set(playbook.findings)):
        for item in playbook.findings[code].acts_on:
            acting.setdefault(item, []).append(code)
    for node in playbook.nodes.values():
        for call in node.probes:
            for item in call.acts_on:
                acting.setdefault(item, []).append(f"probe {call.name} ({node.id})")
    return acting
