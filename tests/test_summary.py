"""The incident summary leads with the answer, in md, html, json and text, from real transcripts.

The fixtures under tests/fixtures/transcripts/ were written by `latency-wizard demo --auto`:
nginx's default buffering in front of the simulator, the kv-pressure scenario (preemptions, a
restart), and auth-required walked without the key (every round and LoadGen run failed); and by
`demo --answers` declaring two parameters for LAT001's change (refused).

Every latency figure a test expects is computed here from the transcript's raw samples (the
measurement events' ``values``, LoadGen's per-query ``values``) with the standard library, and
every server figure from the server's own counts in the round's facts: never copied from what the
summary code printed, so a summary that reads the wrong round or the wrong statistic fails.
"""

from __future__ import annotations

import copy
import itertools
import json
import re
import statistics
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests import chromium
from tests.conftest import assert_export_contract, wizard_command
from wizard.i18n.words import WORDS, count, ms, percent, signed_percent
from wizard.record import transcript
from wizard.record.transcript import Redactor, TranscriptWriter

ROOT = Path(__file__).resolve().parent.parent
FIXTURES = ROOT / "tests" / "fixtures" / "transcripts"
NGINX = FIXTURES / "demo-nginx-buffering.ndjson"
KV = FIXTURES / "demo-kv-pressure.ndjson"
NO_KEY = FIXTURES / "demo-auth-required-no-key.ndjson"
REFUSED = FIXTURES / "demo-nginx-two-parameters-refused.ndjson"
EXAMPLES = sorted((ROOT / "transcripts" / "examples").glob("*.ndjson"))
RAW_FLOAT = re.compile(r"(?<![\d:.])\d+\.\d{3,}")  # 0.0011101859561476468, not a time of day


def export(path: Path, fmt: str, *extra: str) -> str:
    result = subprocess.run(wizard_command("export", str(path), "--format", fmt, *extra),
                            capture_output=True, text=True, timeout=120)  # fmt: skip
    assert result.returncode == 0, result.stderr
    return result.stdout


def rounds(path: Path) -> dict[str, list[dict[str, Any]]]:
    """Each measured round's raw samples by its name, in the order the walk measured them (a walk
    that starts again after a restart measures ``direct`` and ``proxy`` twice)."""
    measured: dict[str, list[dict[str, Any]]] = {}
    for event in transcript.load(path).events:
        data = event["data"]
        if event["type"] == "measurement":
            measured.setdefault(data["round"], []).append(data["values"])
        elif event["type"] == "probe_result" and data.get("probe") == "validate":
            measured.setdefault(data["as"], []).append(data["facts"]["values"])
    return measured


def p50(*samples: dict[str, Any], segment: str = "ttft_ms") -> float:
    """The median of one segment over the given rounds' samples pooled."""
    return float(statistics.median(v for values in samples for v in values[segment]))


def p99(values: dict[str, Any], segment: str) -> float:
    """The 99th percentile, interpolated between closest ranks as numpy's default does."""
    return float(statistics.quantiles(values[segment], n=100, method="inclusive")[98])


def table_cells(values: dict[str, Any]) -> str:
    """The summary's p50 / p99 cells of one round: TTFT, TPOT, ITL, E2E."""
    segments = ("ttft_ms", "tpot_ms", "itl_ms", "e2e_ms")
    return " | ".join(f"{ms(p50(values, segment=s))} / {ms(p99(values, s))}" for s in segments)


def server_facts(path: Path, round_name: str) -> dict[str, Any]:
    """The server's own counts over one round, as the walk recorded them."""
    return dict(
        next(e["data"]["facts"]["server"] for e in transcript.load(path).events
             if e["type"] == "probe_result" and e["data"].get("round") == round_name)
    )  # fmt: skip


BAND = re.compile(r"±\s*([\d,]+(?:\.\d+)?)\s*%")


@pytest.mark.parametrize(
    "path", [*EXAMPLES, *sorted(FIXTURES.glob("*.ndjson"))], ids=lambda p: p.name
)
def test_no_export_or_replay_shows_a_band_beyond_100_percent(path: Path) -> None:
    """A band beyond ±100 % (an A/A pair that moved more than 2x, a ratio of near-zero medians)
    is no noise estimate: every reader says why instead of printing it."""
    shown = [export(path, fmt) for fmt in ("md", "text")]
    replay = subprocess.run(wizard_command("replay", str(path)), capture_output=True, text=True,
                            timeout=120)  # fmt: skip
    shown.append(replay.stdout)
    bands = [float(b.replace(",", "")) for text in shown for b in BAND.findall(text)]
    assert all(band <= 100 for band in bands), sorted(bands)[-3:]


def test_numbers_are_written_for_people() -> None:
    assert (percent(0.0011101859561476468), percent(0.209), percent(1.0), percent(0.0)) == (
        "0.1 %", "21 %", "100 %", "0 %",
    )  # fmt: skip
    assert (ms(140.957525), ms(24.619714), ms(None), ms(1357.19)) == ("141", "24.6", "-", "1,357")
    # No signed zero: a LoadGen change read "-0.0".
    assert (ms(-0.04), ms(-0.06)) == ("0.0", "-0.1")
    assert (count(6.0), signed_percent(-0.8253), signed_percent(-0.0039)) == ("6", "-83 %", "0 %")


def test_text_leads_with_the_cause_the_change_and_its_proven_effect() -> None:
    lines = export(NGINX, "text").splitlines()
    measured = rounds(NGINX)
    incident, direct, final = measured["proxy"][0], measured["direct"][0], measured["proxy"][-1]
    fixed = p50(measured["proxy#2"][0], measured["proxy#3"][0])  # the walk pooled its repeats
    assert len(lines) <= 15
    assert lines[1] == "Root cause: LAT001 The proxy buffers the token stream (FAIL)"
    symptom = f"TTFT p50 {p50(incident):.1f} ms through the proxy vs {p50(direct):.1f} ms direct"
    assert lines[2].startswith("Symptom: ") and symptom in lines[2], (symptom, lines[2])
    assert lines[3] == "The one change: `proxy_buffering off;` (proxy_buffering on -> off)"
    effect = lines[4]
    assert effect.startswith("Proven effect: LAT001 cause gone in proxy#2: ")
    # The walk's own comparison, as it judged it (a wide A/A band made it "within noise"); the band
    # itself (±147 %) bounds nothing and is not shown.
    relative = signed_percent(fixed / p50(incident) - 1)
    assert (
        f"TTFT p50 {ms(p50(incident))} -> {ms(fixed)} ms ({relative}), within noise "
        "(no band: the same round measured twice moved by more than 2x)" in effect
    ), effect
    assert "events per read 11 -> 1 (typical)" in effect
    assert "Outcome: no cause remains" in lines
    # The incident's proxy baseline beside its final state, not the post-fix one only.
    assert incident_to_final(incident, final, "proxy p50 (incident -> final): TTFT {} -> {} ms, "
                             "TPOT {} -> {} ms") in lines, lines  # fmt: skip
    assert "Audit: Nothing to flag." in lines and lines[-1].startswith(
        "Replay: latency-wizard replay "
    )
    assert "None" not in "\n".join(lines) and not RAW_FLOAT.search("\n".join(lines))


def incident_to_final(incident: dict[str, Any], final: dict[str, Any], template: str) -> str:
    """``template`` filled with TTFT and TPOT p50, incident then final, as the summary shows them."""
    ttft, tpot = ((ms(p50(incident, segment=s)), ms(p50(final, segment=s)))
                  for s in ("ttft_ms", "tpot_ms"))  # fmt: skip
    return template.format(*ttft, *tpot)


def test_markdown_puts_the_first_baseline_beside_the_final_state() -> None:
    md = export(NGINX, "md")
    measured = rounds(NGINX)
    incident, final = measured["proxy"][0], measured["proxy"][-1]
    assert md.index("## TL;DR") < md.index("## Baseline") < md.index("## Findings")
    assert "- **Root cause**: LAT001 The proxy buffers the token stream (FAIL)" in md
    assert f"| proxy | incident, steady | {table_cells(incident)} |" in md
    assert f"| proxy | final, steady | {table_cells(final)} |" in md
    # Verdicts in words, with the rounds they pooled; units on every number.
    before, after = p50(incident), p50(measured["proxy#2"][0], measured["proxy#3"][0])
    assert (
        f"| proxy_buffering: on -> off | TTFT p50, proxy -> proxy#2 + proxy#3 | {ms(before)} ms | "
        f"{ms(after)} ms | {signed_percent(after / before - 1)} |" in md
    )
    assert "| proxy_buffering: on -> off | LAT001 (proxy#2) |" in md and "cause gone |" in md
    assert "tpot_ms" not in md and "None" not in md and not RAW_FLOAT.search(md)
    assert "- **proposed, not applied**: LAT005 HTTP/1.0 to the upstream, without keepalive: " in md
    assert "GPU host, from the files collected there (env.txt, gpus.csv, lscpu.txt, topo.txt)" in md


def preempted_then_not(path: Path) -> str:
    """The server's own preemption count and KV peak over the loaded round and its repeat."""
    before, after = server_facts(path, "loaded"), server_facts(path, "loaded#2")
    assert before["preemptions"] > 0 and after["preemptions"] == 0  # the fixture's fault, fixed
    return (
        f"preemptions {count(before['preemptions'])} -> {count(after['preemptions'])}, "
        f"KV peak {percent(before['kv_usage_max'])} -> {percent(after['kv_usage_max'])}"
    )


def test_server_side_deltas_and_the_restart_in_the_kv_pressure_walk() -> None:
    text = export(KV, "text")
    assert "Root cause: LAT010 Requests are preempted for lack of KV-cache space (FAIL)" in text
    assert f"server in loaded -> loaded#2: {preempted_then_not(KV)}" in text
    md = export(KV, "md")
    for name in ("loaded", "loaded#2"):  # the server-side table, units in its header
        server = server_facts(KV, name)
        preemptions = count(server["preemptions"])
        cells = [count(server["waiting_max"]), count(server["running_max"]),
                 f"**{preemptions}**" if server["preemptions"] else preemptions,
                 percent(server["kv_usage_max"]), ms(server["ttft_outside_engine_ms"])]  # fmt: skip
        assert f"| {name} | {' | '.join(cells)} |" in md, (name, cells)
    assert (
        "| round | waiting max (requests) | running max (requests) | preemptions (count) | KV cache peak (%) |"
        in md
    )
    assert "| direct | final | not measured again |" in md


def test_failed_rounds_and_a_loadgen_run_without_success_are_reported_and_audited() -> None:
    md = export(NO_KEY, "md")
    audit = md[md.index("## Audit") :]
    assert "Nothing to flag" not in audit
    assert (
        "- round direct failed: http://127.0.0.1:48081/v1/models answered 401 Unauthorized" in audit
    )
    loadgen = next(e["data"]["facts"] for e in transcript.load(NO_KEY).events
                   if e["type"] == "probe_result" and e["data"]["as"] == "loadgen_before")  # fmt: skip
    assert loadgen["failed"] == loadgen["queries"] > 0
    assert (
        f"- LoadGen SingleStream (loadgen_before): ERROR, {loadgen['failed']} of "
        f"{loadgen['queries']} queries failed" in audit
    )
    rounds = md[md.index("## Every round") : md.index("## Findings")]
    assert rounds.count("**failed: ") == 4 and rounds.count("**LoadGen SingleStream: ERROR (") == 2
    assert "- **Outcome**: causes remain: auth_failure, validation_invalid" in md
    data = json.loads(export(NO_KEY, "json"))
    assert [r["status"] for r in data["rounds"]] == ["failed"] * 6
    text = export(NO_KEY, "text")
    assert "Rounds: 6 rounds (6 failed)" in text and "Audit: round direct failed: " in text


def test_a_refused_change_is_in_the_answer_the_changes_and_the_audit() -> None:
    """The operator declared two parameters for LAT001's change: the walk refused the step."""
    text = export(REFUSED, "text")
    assert (
        "The one change: `proxy_buffering off;` (proxy_buffering on -> off); proposed, not applied"
        in text
    )
    assert "Outcome: causes remain: proxy_buffering" in text
    refusal = "refused: 'proxy_buffering, proxy_http_version' is not one parameter name"
    assert f"Audit: {refusal}" in text
    md = export(REFUSED, "md")
    assert (
        f"- **proposed, not applied**: LAT001 The proxy buffers the token stream: `proxy_buffering off;` ({refusal}"
        in md
    )
    assert f"## Audit\n\n- {refusal}" in md


def test_a_salvaged_transcript_says_what_was_not_kept(tmp_path: Path) -> None:
    torn = tmp_path / "torn.ndjson"
    torn.write_bytes(KV.read_bytes()[:-40])  # the end event cut mid-write
    text = export(torn, "text", "--salvage")
    assert "(session incomplete) (salvaged: line " in text.splitlines()[0]
    assert "Outcome: the walk did not finish" in text
    assert "(salvaged: line " in export(torn, "md", "--salvage").splitlines()[2]


def test_json_keeps_the_contract_and_adds_the_answer() -> None:
    data = json.loads(export(NGINX, "json"))
    assert_export_contract(data)
    proxy = rounds(NGINX)["proxy"]
    assert data["baseline"]["proxy"]["steady"]["ttft_p50"] == pytest.approx(p50(proxy[0]))
    assert data["final"]["proxy"]["steady"]["ttft_p50"] == pytest.approx(p50(proxy[-1]))
    answer = data["answer"]
    assert answer["cause"] == {"code": "LAT001", "title": "The proxy buffers the token stream",
                               "severity": "fail", "cause": "proxy_buffering"}  # fmt: skip
    assert answer["change"]["apply"] == "proxy_buffering off;" and answer["change"]["applied"]
    assert answer["effect"]["cause_verdict"]["verdict"] == "cause gone"
    assert answer["effect"]["events_per_read"]["before"]["typical"] == 11.0
    assert {"rounds", "first", "final", "not_applied", "notes", "audit_flags"} <= set(data)


def test_the_summary_speaks_chinese() -> None:
    text = export(NGINX, "text", "--lang", "zh")
    assert (
        "根因：LAT001 代理缓冲了 token 流（严重）" in text
        and "已验证的效果：LAT001 在 proxy#2 中原因已消除" in text
    )
    proxy = rounds(NGINX)["proxy"]
    template = "proxy p50（故障 -> 最终）：TTFT {} -> {} ms，TPOT {} -> {} ms"
    assert incident_to_final(proxy[0], proxy[-1], template) in text
    md = export(NGINX, "md", "--lang", "zh")
    for heading in (
        "## TL;DR 结论",
        "## 基线（故障时的首轮测量）与最终状态对照",
        "## 变更",
        "## 全部测量轮次",
        "## 审计",
    ):
        assert heading in md
    assert "互联 单 GPU（无互联）" in md  # the host's evidence in words ("互联 single" before)
    page = export(NGINX, "html", "--lang", "zh")
    # A round's path is a word on one line (in a narrow column it stood one character a line).
    assert '<td class="word">经代理</td>' in page and ".word{white-space:nowrap}" in page
    assert (
        "<html lang='zh'>" in page
        and "<strong>根因</strong>" in page
        and "基线（故障时的首轮测量）" in page
    )
    # The summary's own words (the walk's notes and evidence are recorded text, in English).
    ours = md[: md.index("## 诊断过程中的说明")] + md[md.index("## 时间线") :] + text
    # (A decision's words are recorded text too: this transcript predates their zh texts. A
    # value's words, such as the "baseline" a comparison is made against, are also its id.)
    english = {
        w["en"]
        for key, w in WORDS.items()
        if w["en"] != w["zh"]
        and len(w["en"]) > 6
        and "{" not in w["en"]
        # The probe views' words (view.*) are no summary's: "through the proxy" is also in this
        # old transcript's recorded English evidence.
        and not key.startswith(("decision.", "value.", "view."))
    }
    assert not [phrase for phrase in english if phrase in ours]


def _hostile_copy(tmp_path: Path) -> Path:
    """The nginx walk with someone else's text where a server or an operator puts it."""
    source = transcript.load(NGINX)
    header = {
        k: v
        for k, v in source.header.items()
        if k not in ("type", "schema_version", "tool_version", "started_at")
    }
    path = tmp_path / "hostile.ndjson"
    writer = TranscriptWriter.create(path, header, Redactor())
    for event in source.events:
        data: dict[str, Any] = json.loads(json.dumps(event["data"]))
        if event["type"] == "probe_result" and data["probe"] == "endpoints":
            data["facts"]["model"] = "<img src=x onerror=alert(1)>"
        if event["type"] == "finding" and data["code"] == "LAT001":
            data["evidence"] = "<script>alert(2)</script> | `a` & b"
        if event["type"] == "change":
            data["parameter"] = "</title><script>alert(3)</script>"
        if event["type"] == "verdict":
            data["evidence"] = "<b>bold</b> | a pipe"
        writer.append(event["type"], event["node"], data)
    writer.close()
    return path


def test_html_escapes_every_text(tmp_path: Path) -> None:
    page = export(_hostile_copy(tmp_path), "html")
    assert "<script" not in page and "<img" not in page
    assert (
        "&lt;img src=x onerror=alert(1)&gt;" in page
        and "&lt;script&gt;alert(2)&lt;/script&gt;" in page
    )
    md = export(_hostile_copy(tmp_path / "md"), "md")
    assert "&lt;b&gt;bold&lt;/b&gt;" in page
    assert "| &lt;b>bold&lt;/b> \\| a pipe |" in md  # inert, and a pipe in a cell does not end it


PAGE_PROBE = """(() => {
  const figures = Array.from(document.querySelectorAll('.charts figure'));
  return {
    text: document.body.innerText,
    failColour: getComputedStyle(document.querySelector('li.fail')).color,
    charts: figures.map(f => ({
      section: f.closest('.charts').previousElementSibling.previousElementSibling.textContent,
      title: Array.from(f.querySelectorAll('.title')).map(t => t.textContent).join(' '),
      bars: Array.from(f.querySelectorAll('rect.rect')).map(r => r.getBBox().height),
      values: Array.from(f.querySelectorAll('text.value')).map(t => t.textContent),
    })),
  };
})()"""


def test_html_loads_in_chromium_without_errors_and_shows_the_cause(tmp_path: Path) -> None:
    page = tmp_path / "summary.html"
    page.write_text(export(NGINX, "html"))
    loaded = chromium.load(page, PAGE_PROBE)
    assert loaded["errors"] == []
    assert loaded["requests"] == [page.resolve().as_uri()]  # self-contained: nothing else fetched
    value = loaded["value"]
    assert "Root cause: LAT001 The proxy buffers the token stream (FAIL)" in value["text"]
    assert value["failColour"] == "rgb(176, 0, 32)"
    charts = value["charts"]
    # One chart per segment beside the table it illustrates, each on its own scale: E2E (~800 ms)
    # does not flatten TPOT (~11 ms), and every non-zero bar is visible.
    baseline = [c for c in charts if c["section"].startswith("Baseline")]
    assert [c["title"] for c in baseline] == [
        f"{s} p50 (ms): incident and final" for s in ("TTFT", "TPOT", "ITL", "E2E")
    ]
    changes = [c for c in charts if c["title"].endswith("p50 (ms), proxy_buffering")]
    assert len(changes) == 3 and all(c["section"] == "Changes" for c in changes)
    for chart in charts:
        tallest = max(chart["bars"])
        for height, label in zip(chart["bars"], chart["values"], strict=True):
            assert label in ("0.0", "-") or height > tallest / 20, chart


@pytest.mark.parametrize("example", EXAMPLES, ids=[p.name for p in EXAMPLES])
def test_the_shipped_examples_lead_with_a_cause(example: Path) -> None:
    lines = export(example, "text").splitlines()
    assert len(lines) <= 15 and lines[1].startswith("Root cause: LAT0")
    assert any(line.startswith("The one change: `") for line in lines)
    effect = next((line for line in lines if line.startswith("Proven effect: ")), "")
    assert " cause gone in " in effect  # the cause's own evidence first, then latency
    if example.name.startswith("3-"):  # the server refused to start: its next start proves it
        assert effect == (
            "Proven effect: LAT014 cause gone in start#2: the server answers (/health 200) and its "
            "log's new start has no refusal: max_num_batched_tokens 8192 for max_model_len 8192, "
            "`enable_chunked_prefill=False`"
        )
        assert "(max_num_batched_tokens 2048 -> 8192)" in lines[3]
        # Its first rounds were measured only after the fix: they are not called the incident's.
        assert any(line.startswith("direct p50 (after the fix): TTFT ") for line in lines)
    if example.name.startswith("2-"):
        measured = rounds(example)
        repeats = [measured[name][0] for name in measured if name.startswith("proxy#")]
        figures = f"TTFT p50 {ms(p50(measured['proxy'][0]))} -> {ms(p50(*repeats))} ms"
        assert "events per read 11 -> 1 (typical)" in effect and figures in effect, effect
    if example.name.startswith("1-"):
        assert preempted_then_not(example) in effect, effect
    md = export(example, "md")
    assert "None" not in md and not RAW_FLOAT.search(md.split("## Findings")[0])


def test_the_api_alone_does_not_make_the_workload_the_incidents() -> None:
    # The demo names the API (completions) and nothing else: its summary said "Workload (the
    # incident's): 64 words in, 64 tokens out, 4 streams", the wizard's own numbers (found trying
    # the README as a new user).
    from wizard.report import summary

    spec = {"model": "m", "endpoint": "completions", "input_tokens": 64, "output_tokens": 64,
            "concurrency": 4}  # fmt: skip
    rounds = [{"as": "direct", "spec": spec}]
    api_only = summary.workload({"workload": {"endpoint": "completions"}}, rounds)
    assert api_only is not None and api_only["incident"] is False
    assert "the wizard's own" in summary.workload_text(api_only, "en")
    given = summary.workload({"workload": {"endpoint": "chat", "input_tokens": 900}}, rounds)
    assert given is not None and given["incident"] is True
    assert "the incident's" in summary.workload_text(given, "en")


def test_loadgen_is_credited_to_no_change_but_listed_as_validation_on_its_path() -> None:
    """LoadGen runs direct to vLLM, before the first change and after the last: it validates every
    change together, so its rows are no effect of the proxy change that acts through nginx."""
    markdown = export(NGINX, "md")
    rows = [line for line in markdown.splitlines() if "loadgen_before -> loadgen" in line]
    assert len(rows) == 2 and all(
        row.startswith("| Validation, direct path (every change together) |") for row in rows
    )
    assert not [line for line in markdown.splitlines()
                if line.startswith("| proxy_buffering") and "loadgen" in line]  # fmt: skip
    html = export(NGINX, "html")
    assert html.count("Validation, direct path (every change together)") == 2
    measured = rounds(NGINX)  # the comparison's before is the last run before the last change
    before, after = p50(measured["loadgen_before"][-1]), p50(measured["loadgen"][-1])
    assert (
        f"Validation, direct path (every change together): TTFT p50 {ms(before)} -> {ms(after)} ms"
        in export(NGINX, "text")
    )
    data = json.loads(export(NGINX, "json"))
    assert [c["against"] for change in data["changes"] for c in change["effect"]] == ["baseline"]
    assert [(v["before"], v["after"], v["path"]) for v in data["validation"]] == [
        ("loadgen_before", "loadgen", "direct")
    ]
    assert "验证，直连路径（全部变更合计）" in export(NGINX, "md", "--lang", "zh")


AXIS_PROBE = """(() => Array.from(document.querySelectorAll('.charts figure')).map(f => ({
  title: Array.from(f.querySelectorAll('.title')).map(t => t.textContent).join(' '),
  labels: Array.from(f.querySelectorAll('g.axis.y text')).map(t => {
    const box = t.getBoundingClientRect();
    return {text: t.textContent, top: box.top, bottom: box.bottom};
  }),
})))()"""


@pytest.mark.parametrize("transcript_path", [NGINX, KV], ids=["nginx", "kv-pressure"])
def test_chart_axis_labels_never_overlap(transcript_path: Path, tmp_path: Path) -> None:
    """Every y-axis label of every chart, as Chromium lays it out, clears its neighbours."""
    page = tmp_path / "summary.html"
    page.write_text(export(transcript_path, "html"))
    charts = chromium.load(page, AXIS_PROBE)["value"]
    assert charts
    for chart in charts:
        labels = sorted(chart["labels"], key=lambda label: label["top"])
        assert len(labels) >= 2, chart  # a scale to read, not a bare axis
        for upper, lower in itertools.pairwise(labels):
            assert upper["bottom"] <= lower["top"], (chart["title"], upper, lower)


def test_a_walk_that_changed_nothing_shows_no_final_state_and_no_change_validation() -> None:
    """Both changes were refused (two parameters): nothing was changed, so no "incident -> final"
    difference (TTFT 22.2 -> 32.5 ms read as an effect) and no "every change together"."""
    text = export(REFUSED, "text")
    assert "-> final" not in text and "every change together" not in text
    direct = rounds(REFUSED)["direct"][0]
    ttft, tpot = (ms(p50(direct, segment=s)) for s in ("ttft_ms", "tpot_ms"))
    assert f"direct p50 (incident): TTFT {ttft} ms, TPOT {tpot} ms" in text
    md = export(REFUSED, "md")
    assert "## Baseline (the incident's first rounds; nothing was changed)" in md
    assert "| final, steady |" not in md and "beside the final state" not in md
    zh = export(REFUSED, "md", "--lang", "zh")
    assert "未做任何变更" in zh and "最终" not in zh.split("##")[2]


def test_a_validation_with_nothing_changed_is_the_same_server_measured_again(
    tmp_path: Path,
) -> None:
    """LoadGen run twice on a walk that changed nothing is no "every change together"."""
    from tests.forge import read_records, write_rechained

    header, events = read_records(REFUSED)
    _, nginx_events = read_records(NGINX)
    validation = next(e for e in nginx_events if e["type"] == "comparison"
                      and e["data"]["against"] == "before the changes")  # fmt: skip
    same = copy.deepcopy(validation)
    same["data"]["against"] = "the same run earlier (nothing changed)"
    end = len(events) - 1 if events[-1]["type"] == "end" else len(events)
    path = write_rechained(tmp_path / "t.ndjson", header, [*events[:end], same, *events[end:]])
    text = export(path, "text")
    # (its LoadGen runs are not in this walk, so their path is unknown here)
    assert "path (the same server, measured again): TTFT p50" in text
    assert "every change together" not in text
    assert "同一服务器再测一次" in export(path, "md", "--lang", "zh")
