"""Issue #13, Chinese throughout: the walk's lines about a server that does not answer, its log's
errors and a rule its contended client could not judge, rendered in zh, hold no English sentence
and no raw value (they said "nothing listens there ...", "engine_init_failed (line 2)" and the
client's English reason); nor do ``probe vllm-log`` and ``probe host`` with ``--lang zh``, notes
included (they printed English ``key: value`` lines and notes)."""

from __future__ import annotations

import json
import os
import re
import subprocess
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from rich.console import Console

from tests.conftest import refused_start, wizard_command
from tests.fuzzing import FIXTURES
from tests.text_checks import english_sentences, raw_values
from wizard.i18n.words import texts
from wizard.levers.nginx_runner import free_port
from wizard.measure import contention
from wizard.probes.runner import ProbeContext, run_probe
from wizard.record import transcript
from wizard.ui import aio
from wizard.ui.render_events import render_event
from wizard.walk import audit


def shown(event_type: str, data: dict[str, Any], lang: str) -> str:
    console = Console(record=True, width=200, color_system=None)
    renderable = render_event({"type": event_type, "node": "n", "data": data}, lang)
    assert renderable is not None
    console.print(renderable)
    return console.export_text()


def probe_event(name: str, ctx: ProbeContext) -> dict[str, Any]:
    result = aio.run(run_probe(name, ctx, {}))
    return {"as": name, "round": name, **result.to_dict()}


def test_a_server_that_refused_to_start_is_described_in_chinese(tmp_path: Path) -> None:
    port, log = free_port(), tmp_path / "vllm.log"
    refused_start(port, log, "--scenario", "chunked-prefill-off-bad-budget")
    ctx = ProbeContext(target=f"http://127.0.0.1:{port}", vllm_log=str(log))
    down = shown("probe_result", probe_event("endpoints", ctx), "zh")
    assert "该端口没有服务在监听" in down, down
    read = shown("probe_result", probe_event("vllm-log", ctx), "zh")
    assert "max_num_batched_tokens 小于 max_model_len（第 3 行）" in read, read
    for text in (down, read):
        assert english_sentences(text) == [] and raw_values(text) == [], text
    # In English the log's errors are words too, not the reader's ids.
    assert "errors: engine start-up failed (line 2)" in shown(
        "probe_result", probe_event("vllm-log", ctx), "en"
    ).replace("\n", " ")


def test_an_inconclusive_rule_gives_its_clients_reason_in_chinese() -> None:
    reason = texts("client.contended", lag="12.0", cpu="30 %", high="12.0")
    facts = {
        "direct": {"client": {"contended": True, "reason": reason["en"], "reason_texts": reason}}
    }
    said = contention.reason_texts(facts, ["direct"])
    assert said == {"en": f"direct: {reason['en']}", "zh": f"direct: {reason['zh']}"}
    data = {"code": "LAT042", "cause": "c", "title": {"en": "t", "zh": "t"}, "rounds": ["direct"],
            "reason": said["en"], "reason_texts": said}  # fmt: skip
    line = shown("inconclusive", data, "zh")
    assert english_sentences(line) == [] and reason["zh"] in line.replace("\n", ""), line
    # A transcript written before the reason was kept in every language still shows its English.
    old = {"direct": {"client": {"contended": True, "reason": reason["en"]}}}
    assert contention.reason_texts(old, ["direct"]) == {"en": f"direct: {reason['en']}"}


# A pasted command and a log whose lines the reader cannot all read: each gives a note.
NOTED_LOG = """\
vllm serve m --max-model-len $MAXLEN --gpu-memory-utilization ${GMU:-0.9} --max-num-seqs lots --tensor-parallel-size
(APIServer pid=1) INFO 12-01 10:00:00 [utils.py:253] non-default args: {'model': 'm', 'max_model_len': 8192
(APIServer pid=1) INFO 12-01 10:00:05 [loggers.py:123] Engine 000: Avg prompt throughput: x tokens/s, Running: y reqs
"""


def cli(*args: str) -> str:
    result = subprocess.run(wizard_command(*args), capture_output=True, text=True, timeout=60,
                            env={**os.environ, "LANG": "C.UTF-8"})  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def test_probe_vllm_log_says_what_it_read_and_skipped_in_chinese(tmp_path: Path) -> None:
    log = tmp_path / "vllm.log"
    log.write_text(NOTED_LOG)
    report = json.loads(cli("probe", "vllm-log", str(log), "--json"))
    # English stays where scripts read it; every note is also said in every language.
    assert report["notes"] == [said["en"] for said in report["notes_texts"]]
    assert (
        report["notes"][0]
        == "line 1: --max-model-len $MAXLEN is a variable: its value is not in the paste"
    )
    assert len(report["notes"]) == 6
    said = cli("probe", "vllm-log", str(log), "--lang", "zh")
    for note in report["notes_texts"]:
        assert note["zh"] in said
    assert "第 3 行：一行读不懂的统计行，已跳过" in said
    assert english_sentences(said) == [] and raw_values(said) == [], said
    assert cli("probe", "vllm-log", str(log)).startswith("model: m\n")  # English: as it was


def test_probe_host_says_what_it_found_in_chinese(tmp_path: Path) -> None:
    evidence = tmp_path / "host"
    evidence.mkdir()
    (evidence / "lscpu.txt").write_text("Core(s) per socket:  8\nSocket(s):           2\n")
    (evidence / "notes.txt").write_text("something else\n")
    said = cli("probe", "host", "--host-evidence", str(evidence), "--lang", "zh")
    assert "16 个物理核心" in said and "notes.txt：无法识别" in said, said
    assert english_sentences(said) == [] and raw_values(said) == [], said
    facts = json.loads(cli("probe", "host", "--host-evidence", str(evidence), "--json"))
    assert facts["notes"] == [note["en"] for note in facts["notes_texts"]]


EXAMPLES = sorted((Path(__file__).parent.parent / "transcripts" / "examples").glob("*.ndjson"))


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_the_shipped_examples_replay_as_sentences(example: Path) -> None:
    """Each example walk, replayed in either language: no raw value, no English in Chinese."""
    for lang in ("en", "zh"):
        shown_walk = cli("replay", str(example), "--lang", lang)
        assert raw_values(shown_walk) == [], (lang, raw_values(shown_walk))
        if lang == "zh":
            assert english_sentences(shown_walk) == [], english_sentences(shown_walk)


def test_the_audits_flags_are_said_in_words() -> None:
    """The closing audit's line names what it flagged as a person says it, not as the probe's
    fact names ("flags: multiple_changes_in_step")."""
    session = SimpleNamespace(measurements=[], comparisons=[], facts={},
                              changes=[{"parameter": p, "code": "LAT001", "measured": False}
                                       for p in ("proxy_buffering", "gzip")])  # fmt: skip
    facts = aio.run(audit.probe(SimpleNamespace(session=session), {}))
    assert facts["multiple_changes_in_step"] is True
    event = {"probe": "audit", "as": "audit", "round": None, "error": None, "facts": facts}
    assert "flags: several changes in one step" in shown("probe_result", event, "en")
    said = shown("probe_result", event, "zh")
    assert "标记：一步中有多项变更" in said, said
    assert english_sentences(said) == [] and raw_values(said) == [], said


@pytest.mark.parametrize(
    ("lang", "header", "title"),
    [("en", "ok", "direct: direct path, http://"), ("zh", "成功", "direct：直连路径，http://")],
)
def test_a_rounds_table_gives_its_unit_and_its_path_in_words(
    lang: str, header: str, title: str
) -> None:
    """Issue #13 item 4: the walk's round table says its times are ms ("no units" before), and
    its title names the path in words ("direct: direct http://..." before)."""
    recorded = transcript.load(FIXTURES / "transcripts" / "demo-kv-pressure.ndjson").events
    event = next(
        e for e in recorded if e["type"] == "probe_result" and e["data"]["probe"] == "measure"
    )
    said = shown("probe_result", event["data"], lang)
    columns = next(line for line in said.splitlines() if "TTFT p50" in line)
    assert re.match(r"┃ ms +┃ TTFT p50 ┃", columns) and columns.rstrip("┃ ").endswith(header), said
    assert said.startswith(title), said
    assert raw_values(said) == [], said


def test_an_event_that_does_not_fit_is_said_in_chinese() -> None:
    """An edited or foreign event is left out with one line, in the reader's language."""
    console = Console(record=True, width=200, color_system=None)
    console.print(render_event({"type": "probe_result", "seq": 7, "node": "n", "data": {}}, "zh"))
    said = console.export_text()
    assert said.startswith("  第 7 个事件（probe_result）无法显示：data.probe"), said
