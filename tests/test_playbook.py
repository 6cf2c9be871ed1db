"""The playbook: the built-in one is valid and complete; every validation rule has a negative test."""

from __future__ import annotations

import copy
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import wizard_command
from wizard import playbook
from wizard.cli.playbook_cmd import findings_markdown, render_graph
from wizard.playbook import conditions
from wizard.playbook.vocabulary import PROCEDURE_ITEMS

ROOT = Path(__file__).resolve().parent.parent
TEXT = {"en": "x", "zh": "x"}


def minimal() -> dict[str, Any]:
    """A small valid playbook: two stages, a measurement node, every procedure item covered."""
    return {
        "id": "mini", "version": 1, "stages": ["one", "two"], "start": "a",
        "nodes": {
            "a": {"stage": "one", "title": TEXT, "explain": TEXT, "covers": list(PROCEDURE_ITEMS),
                  "measure": True, "probes": [{"name": "measure", "as": "m"}],
                  "rules": [{"when": {"fact": "m.x", "gt": 1}, "finding": "LAT001"}],
                  "next": [{"when": {"fact": "m.y", "eq": 1}, "to": "b"}, {"to": "b"}]},
            "b": {"stage": "two", "title": TEXT, "explain": TEXT,
                  "ask": [{"id": "q", "type": "number", "default": 1, "text": TEXT}],
                  "next": [{"to": "end"}]},
        },
        "findings": {"LAT001": {"cause": "proxy_buffering", "severity": "fail", "title": TEXT,
                                "acts_on": list(PROCEDURE_ITEMS),
                                "advice": TEXT, "evidence": "e", "docs": ["https://nginx.org"],
                                "change": {"layer": "nginx", "parameter": "proxy_buffering",
                                           "apply": "proxy_buffering off;"}}},
    }  # fmt: skip


def write(tmp_path: Path, data: Any) -> Path:
    path = tmp_path / "book.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True, sort_keys=False))
    return path


def problems(tmp_path: Path, mutate: Callable[[dict[str, Any]], None]) -> list[str]:
    data = minimal()
    mutate(data)
    with pytest.raises(playbook.PlaybookError) as caught:
        playbook.load(write(tmp_path, data))
    return caught.value.problems


def test_builtin_playbook_is_valid_and_covers_the_procedure() -> None:
    book = playbook.load()
    covered = {item for node in book.nodes.values() for item in node.covers}
    assert covered == set(PROCEDURE_ITEMS)
    # Procedure items covered: every item is acted on by a rule (a finding some rule raises),
    # a probe a node runs, or the closing audit, not only named where a node explains it.
    acting = playbook.acted_on(book)
    assert set(acting) == set(PROCEDURE_ITEMS), sorted(set(PROCEDURE_ITEMS) - set(acting))
    raised = {rule.finding for node in book.nodes.values() for rule in node.rules}
    for item, actors in acting.items():
        for actor in actors:
            assert actor in raised or actor.startswith("probe "), (item, actor)
    # The items the coverage review found only explained now have rules of their own.
    assert {"LAT017", "LAT014"} <= set(acting["P3.5"])
    assert "LAT048" in acting["P4.7"]
    # P3.1's core per process: the API server's own core saturating is acted on, not only counted.
    assert {"LAT030", "LAT035"} <= set(acting["P3.1"])
    assert {"LAT031", "LAT032"} <= set(acting["P4.1"]) & set(acting["P4.2"])
    assert acting["P4.4"] == ["LAT032"]
    assert not {a for a in acting["P7.5"] if a.startswith("probe ")}
    assert book.stages == (
        "baseline",
        "entry",
        "resources",
        "parallelism",
        "nginx",
        "validation",
        "audit",
    )
    for finding in book.findings.values():
        assert finding.title["zh"] and finding.advice["zh"] and finding.docs


def test_minimal_playbook_is_valid(tmp_path: Path) -> None:
    book = playbook.load(write(tmp_path, minimal()))
    assert book.successors["a"] == {"b"}


def _drop(path: list[Any]) -> Callable[[dict[str, Any]], None]:
    def mutate(data: dict[str, Any]) -> None:
        target = data
        for key in path[:-1]:
            target = target[key]
        del target[path[-1]]

    return mutate


def _set(path: list[Any], value: Any) -> Callable[[dict[str, Any]], None]:
    def mutate(data: dict[str, Any]) -> None:
        target = data
        for key in path[:-1]:
            target = target[key]
        target[path[-1]] = copy.deepcopy(value)

    return mutate


def _unreachable(data: dict[str, Any]) -> None:
    data["nodes"]["c"] = {"stage": "two", "title": TEXT, "explain": TEXT, "next": [{"to": "end"}]}


def _dead_end(data: dict[str, Any]) -> None:
    data["nodes"]["b"]["next"] = [{"to": "c"}]
    data["nodes"]["c"] = {
        "stage": "two",
        "title": TEXT,
        "explain": TEXT,
        "next": [{"to": "b", "loop": False}],
    }


def _cycle_without_measurement(data: dict[str, Any]) -> None:
    data["nodes"]["b"]["next"] = [{"when": {"answer": "q", "eq": 2}, "to": "c"}, {"to": "end"}]
    data["nodes"]["c"] = {"stage": "two", "title": TEXT, "explain": TEXT, "next": [{"to": "b"}]}


@pytest.mark.parametrize(
    ("mutate", "message"),
    [
        (_drop(["start"]), "missing top-level key 'start'"),
        (_set(["start"], "nowhere"), "start node 'nowhere' does not exist"),
        (_unreachable, "node 'c' is unreachable from 'a'"),
        (_dead_end, "can never reach the end"),
        (_set(["nodes", "b", "next"], [{"to": "a"}]), "goes back from stage 'two' to 'one'"),
        (_cycle_without_measurement, "has no measurement node"),
        (_set(["nodes", "a", "probes"], [{"name": "teleport"}]), "probe 'teleport' is not registered"),
        (_set(["nodes", "a", "rules"], [{"when": True, "finding": "LAT999"}]), "finding LAT999 is not defined"),
        (_set(["nodes", "a", "title"], {"en": "only english"}), "missing its 'zh' text"),
        (_set(["findings", "LAT001", "advice"], {"zh": "只有中文"}), "missing its 'en' text"),
        (_set(["nodes", "a", "covers"], ["P0.1"]), "procedure items not covered by any node: P0.2"),
        (_set(["nodes", "a", "covers"], [*PROCEDURE_ITEMS, "P9.9"]), "unknown procedure item 'P9.9'"),
        (_set(["findings", "LAT001", "acts_on"], ["P0.1"]),
         "procedure items no rule, probe or audit acts on (only explained): P0.2"),
        (_set(["findings", "LAT001", "acts_on"], ["P9.9"]), "unknown procedure item 'P9.9' in acts_on"),
        (_set(["nodes", "a", "probes", 0, "acts_on"], "P0.1"), "acts_on must be a list"),
        (_set(["nodes", "a", "stage"], "zero"), "unknown stage 'zero'"),
        (_set(["nodes", "a", "next"], [{"to": "ghost"}]), "edge to unknown node 'ghost'"),
        (_set(["nodes", "a", "next"], []), "has no 'next'"),
        (_set(["nodes", "a", "rules"], [{"when": {"fact": "x", "between": 1}, "finding": "LAT001"}]),
         "unknown operator 'between'"),
        (_set(["nodes", "a", "colour"], "red"), "unknown key 'colour'"),
        (_set(["findings", "LAT001", "cause"], "gremlins"), "cause 'gremlins' is not in the vocabulary"),
        (_set(["findings", "LAT001", "severity"], "meh"), "severity must be one of"),
        (_set(["findings", "LAT001", "change", "parameter"], "proxy_buffering, gzip"),
         "a change names exactly one parameter"),
        (_set(["findings", "LAT001", "docs"], []), "at least one upstream doc link"),
        (_set(["findings", "L1"], {"cause": "proxy_buffering"}), "finding code 'L1' must look like LAT001"),
        (_set(["nodes", "b", "ask"], [{"id": "q", "type": "slider", "text": TEXT}]), "question type must be one of"),
        (_set(["nodes", "b", "ask"], [{"id": "q", "type": "select", "text": TEXT}]), "needs choices"),
    ],
)  # fmt: skip
def test_each_validation_rule(tmp_path: Path, mutate: Any, message: str) -> None:
    found = problems(tmp_path, mutate)
    assert any(message in p for p in found), found
    assert all(p.startswith(str(tmp_path / "book.yaml") + ":") for p in found)


def test_declared_remeasure_loop_is_allowed(tmp_path: Path) -> None:
    data = minimal()
    data["nodes"]["b"]["next"] = [
        {"when": {"answer": "q", "eq": 2}, "to": "a", "loop": True},
        {"to": "end"},
    ]
    book = playbook.load(write(tmp_path, data))
    assert "a" in book.successors["b"]
    assert book.nodes["b"].next[0].loop is True


def test_every_cycle_without_a_measurement_node_is_named(tmp_path: Path) -> None:
    # graphlib names one cycle at a time: each must still be reported, a self-loop included.
    def mutate(data: dict[str, Any]) -> None:
        _cycle_without_measurement(data)
        data["nodes"]["d"] = {
            "stage": "two",
            "title": TEXT,
            "explain": TEXT,
            "next": [{"when": {"answer": "q", "eq": 3}, "to": "d"}, {"to": "end"}],
        }
        data["nodes"]["b"]["next"].insert(0, {"when": {"answer": "q", "eq": 3}, "to": "d"})

    cycles = sorted(
        p.split("cycle ")[1] for p in problems(tmp_path, mutate) if "no measurement" in p
    )
    assert cycles == ["b -> c -> b has no measurement node", "d -> d has no measurement node"]


def test_loop_must_lead_to_a_measurement_node(tmp_path: Path) -> None:
    def mutate(data: dict[str, Any]) -> None:
        data["nodes"]["a"]["measure"] = False
        data["nodes"]["b"]["next"] = [{"to": "a", "loop": True}, {"to": "end"}]

    assert any("must lead to a measurement node" in p for p in problems(tmp_path, mutate))


def test_errors_carry_the_right_line(tmp_path: Path) -> None:
    path = write(tmp_path, minimal())
    text = path.read_text().replace("finding: LAT001", "finding: LAT404")
    path.write_text(text)
    line = next(i for i, row in enumerate(text.splitlines(), start=1) if "LAT404" in row)
    with pytest.raises(playbook.PlaybookError) as caught:
        playbook.load(path)
    assert (
        f"book.yaml:{line - 1}:" in caught.value.problems[0]
        or f"book.yaml:{line}:" in caught.value.problems[0]
    )


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("nodes: [unclosed", "invalid YAML"),
        ("a: 1\na: 2\n", "duplicate key 'a'"),
        ("- just\n- a list\n", "must be a mapping"),
        ("", "must be a mapping"),
        ("id: x\n!!python/object:os.system {}\n", "invalid YAML"),
    ],
)
def test_malformed_yaml(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(content)
    with pytest.raises(playbook.PlaybookError) as caught:
        playbook.load(path)
    assert message in str(caught.value)


def test_conditions_grammar_and_evaluation() -> None:
    facts = {
        "a": {"b": 5, "list": [1, 2]},
        "direct": {"ttft": 10},
        "proxy": {"ttft": 50},
        "none": None,
    }
    answers = {"q": "pcie", "n": 3}
    holds = [
        True, {"fact": "a.b", "gt": 4}, {"fact": "a.b", "le": 5}, {"answer": "q", "eq": "pcie"},
        {"answer": "q", "in": ["pcie", "nvlink"]}, {"fact": "a.list", "contains": 2},
        {"fact": "proxy.ttft", "gt": {"fact": "direct.ttft", "times": 1.5, "plus": 20}},
        {"answer": "n", "lt": {"answer": "n", "plus": 1}}, {"fact": "missing", "exists": False},
        {"fact": "proxy.ttft", "gt": {"fact": "direct.ttft", "plus": {"fact": "a.b"}}},
        {"fact": "proxy.ttft", "lt": {"fact": "direct.ttft", "plus": {"fact": "proxy.ttft"}}},
        {"all": [{"fact": "a.b", "eq": 5}, {"not": {"fact": "a.b", "eq": 6}}]},
        {"any": [False, {"fact": "a.list.1", "eq": 2}]},
    ]  # fmt: skip
    fails = [
        False, {"fact": "missing", "gt": 1}, {"fact": "none", "gt": 1}, {"fact": "none", "exists": True},
        {"fact": "a.b", "gt": {"fact": "missing"}}, {"fact": "a.b", "gt": "text"},
        {"answer": "unasked", "eq": None},
        {"fact": "a.b", "gt": {"fact": "direct.ttft", "plus": {"fact": "missing"}}},
    ]  # fmt: skip
    for condition in holds:
        conditions.check(condition)
        assert conditions.evaluate(condition, facts, answers), condition
    for condition in fails:
        conditions.check(condition)
        assert not conditions.evaluate(condition, facts, answers), condition
    for bad in ([1], {"fact": "x"}, {"fact": "x", "answer": "y", "eq": 1}, {"all": []},
                {"fact": "x", "gt": {"fact": "y", "power": 2}}, "__import__('os')"):  # fmt: skip
        with pytest.raises(conditions.ConditionError):
            conditions.check(bad)


def test_a_ratio_within_the_measured_noise_is_no_difference() -> None:
    """``noise: segment`` lifts the factor to 1 + the A/A band: on a server whose own repeat moved
    TTFT by 80 %, a proxy 1.6x slower than direct is not shown to be slower."""
    rule = {"fact": "proxy.ttft", "gt": {"fact": "direct.ttft", "times": 1.5, "noise": "ttft_ms"}}
    conditions.check(rule)
    measured = {"direct": {"ttft": 100}, "proxy": {"ttft": 160}}
    assert conditions.evaluate(rule, measured, {})  # no A/A pair: the factor alone
    assert conditions.evaluate(rule, {**measured, "noise": {"ttft_ms": 0.1}}, {})
    assert not conditions.evaluate(rule, {**measured, "noise": {"ttft_ms": 0.8}}, {})
    flat = {"fact": "proxy.ttft", "lt": {"fact": "direct.ttft", "times": 1.5, "noise": "ttft_ms"}}
    assert conditions.evaluate(flat, {**measured, "noise": {"ttft_ms": 0.8}}, {})
    with pytest.raises(conditions.ConditionError):
        conditions.check({"fact": "x", "gt": {"fact": "y", "noise": 0.8}})


def test_divides_tells_whole_multiples() -> None:
    """The nodes divide the pipeline stages: every TP group stays on one node."""
    rule = {"answer": "nodes", "divides": {"answer": "pp"}}
    conditions.check(rule)
    assert conditions.evaluate(rule, {}, {"nodes": 2, "pp": 4})
    assert conditions.evaluate(rule, {}, {"nodes": 1, "pp": 3})
    assert not conditions.evaluate(rule, {}, {"nodes": 2, "pp": 3})
    assert not conditions.evaluate(rule, {}, {"nodes": 0, "pp": 3})
    assert not conditions.evaluate(rule, {}, {"nodes": 2})


def run_cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(wizard_command(*args), capture_output=True, text=True, timeout=60)


def test_playbook_check_cli(tmp_path: Path) -> None:
    ok = run_cli("playbook", "check")
    assert (
        ok.returncode == 0
        and ok.stdout.startswith("ok: ")
        and "44 procedure items covered" in ok.stdout
    )
    data = minimal()
    data["start"] = "nowhere"
    data["nodes"]["a"]["probes"] = [{"name": "teleport"}]
    bad = run_cli("playbook", "check", str(write(tmp_path, data)))
    assert bad.returncode == 1
    lines = bad.stderr.strip().splitlines()
    assert len(lines) >= 2 and all(":" in line and "Traceback" not in line for line in lines)
    missing = run_cli("playbook", "check", str(tmp_path / "absent.yaml"))
    assert missing.returncode == 1 and "cannot read" in missing.stderr


def test_playbook_show_formats() -> None:
    book = playbook.load()
    tree = render_graph(book, "tree")
    assert tree.splitlines()[0] == "baseline.rules [baseline]"
    assert "↺ baseline.direct [baseline]" in tree
    mermaid = render_graph(book, "mermaid")
    assert mermaid.startswith("flowchart TD") and "-.->|loop|" in mermaid
    dot = render_graph(book, "dot")
    assert dot.startswith('digraph "vllm-latency"') and dot.rstrip().endswith("}")
    assert run_cli("playbook", "show", "--format", "mermaid").stdout.strip() == mermaid


def test_findings_doc_is_generated_from_the_playbook() -> None:
    expected = findings_markdown(playbook.load())
    assert (ROOT / "docs" / "findings.md").read_text(encoding="utf-8") == expected
    for code in playbook.load().findings:
        assert f"| {code} |" in expected


# Numbers in a condition that are no threshold: nothing against something (0), a difference's
# sign (-1 in `plus: {fact: x, times: -1}`).
NO_THRESHOLD = (0, -1)


def compared_numbers(condition: Any, subject: str | None = None) -> set[tuple[str, float]]:
    """Every (fact compared, number) in a condition: literal operands and `times`/`plus`."""
    found: set[tuple[str, float]] = set()
    if isinstance(condition, list):
        for item in condition:
            found |= compared_numbers(item)
        return found
    if not isinstance(condition, dict):
        return found
    if subject is None and ("fact" in condition or "answer" in condition):
        subject = condition.get("fact") or f"answers.{condition['answer']}"
    for key, value in condition.items():
        if key in ("all", "any", "not"):
            found |= compared_numbers(value)
        elif key in ("ne", "gt", "ge", "lt", "le", "times", "plus"):
            if isinstance(value, int | float) and not isinstance(value, bool):
                if value not in NO_THRESHOLD and subject is not None:
                    found.add((subject, value))
            else:
                found |= compared_numbers(value, subject)
    return found


def test_every_threshold_says_where_it_comes_from() -> None:
    """Issue #26: each number a finding's rules or its `gone`, or a node's edges, compare with is
    listed in their `thresholds` with a source in both languages (docs/findings.md shows them)."""
    book = playbook.load()
    used: dict[str, set[tuple[str, float]]] = {code: set() for code in book.findings}
    for node in book.nodes.values():
        for rule in node.rules:
            used[rule.finding] |= compared_numbers(rule.when)
    for code, finding in book.findings.items():
        used[code] |= compared_numbers(finding.gone)
    unsourced = {
        code: sorted(numbers - {(t.at, t.value) for t in book.findings[code].thresholds})
        for code, numbers in used.items()
    }
    for node in book.nodes.values():  # the edges' conditions: the node's own thresholds
        numbers = set().union(*(compared_numbers(edge.when) for edge in node.next))
        unsourced[node.id] = sorted(numbers - {(t.at, t.value) for t in node.thresholds})
    assert {code: numbers for code, numbers in unsourced.items() if numbers} == {}
    sources = [t.source for f in book.findings.values() for t in f.thresholds]
    assert len(sources) > 50 and all(s.get("en") and s.get("zh") for s in sources)
    # The thresholds rewritten after a simulator miss say what replaced them.
    doc = findings_markdown(book)
    for code in ("LAT013", "LAT016", "LAT035"):
        assert any("Issue #26" in t.source["en"] for t in book.findings[code].thresholds), code
    assert "| LAT035 | `loaded.server.api_server_cpu_cores` | 1 |" in doc


def test_a_threshold_without_its_source_is_refused(tmp_path: Path) -> None:
    data = yaml.safe_load(
        (ROOT / "wizard" / "playbook" / "vllm-latency.yaml").read_text(encoding="utf-8")
    )
    data["findings"]["LAT004"]["thresholds"] = [{"at": "answers.proxy_connect_timeout_s",
                                                  "value": 75, "from": {"en": "nginx docs"}}]  # fmt: skip
    path = tmp_path / "book.yaml"
    path.write_text(yaml.safe_dump(data, allow_unicode=True), encoding="utf-8")
    with pytest.raises(playbook.PlaybookError, match="threshold source is missing its 'zh' text"):
        playbook.load(path)


def test_chinese_texts_keep_no_space_yaml_folded_into_them() -> None:
    """A folded YAML text joins its lines with a space; Chinese puts none between its characters
    or after its punctuation (the walk showed "改善了哪个阶段。 流程依据")."""
    cjk = "[\u3000-\u303f\u4e00-\u9fff\uff00-\uffef]"
    book = playbook.load()
    texts = [n.explain["zh"] for n in book.nodes.values()]
    texts += [f.advice["zh"] for f in book.findings.values()]
    assert len(texts) > 50
    assert [t for t in texts if re.search(f"{cjk} {cjk}", t)] == []
