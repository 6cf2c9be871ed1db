"""End-to-end walks: ``run --auto`` against every simulator scenario reaches the expected causes."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.conftest import (
    SimProcess,
    assert_walk_exit,
    playbook_with_probes_only,
    playbook_with_rule,
    wizard_command,
)
from tests.text_checks import english_sentences, raw_values
from wizard.record import transcript

SimFactory = Callable[..., SimProcess]


def walk(tmp_path: Path, *args: str, env: dict[str, str] | None = None, answers: dict[str, Any] | None = None,
         timeout: float = 300) -> tuple[subprocess.CompletedProcess[str], Path]:  # fmt: skip
    path = tmp_path / f"walk-{len(list(tmp_path.glob('walk-*')))}.ndjson"
    extra: list[str] = ["--auto"]
    if answers is not None:
        answers_file = tmp_path / "answers.yaml"
        answers_file.write_text(json.dumps(answers))
        extra = ["--answers", str(answers_file)]
    result = subprocess.run(
        wizard_command("run", *args, *extra, "--transcript", str(path)),
        capture_output=True, text=True, timeout=timeout, env={**os.environ, **(env or {})},
    )  # fmt: skip
    return result, path


def causes(path: Path) -> set[str]:
    loaded = transcript.load(path)
    assert loaded.complete
    return {e["data"]["cause"] for e in loaded.events if e["type"] == "finding"}


QUICK = {"run_loadgen": False}  # LoadGen has its own tests; the table stays fast


@pytest.mark.parametrize(
    ("scenario", "answers", "expected"),
    [
        # The scenarios the truth table (tests/test_truth_table.py) does not walk; it walks the
        # others with their evidence and proves each fix, so walking them here again only cost
        # CI minutes.
        ("healthy", QUICK, set()),
        ("batch-budget-large", QUICK, {"batched_tokens_hurts_itl"}),
        ("no-chat-template", QUICK, {"chat_template_missing"}),
        ("cold-start-heavy", QUICK, {"cold_start_slow"}),
    ],
)
def test_scenarios_reach_their_causes(
    sim_factory: SimFactory,
    tmp_path: Path,
    scenario: str,
    answers: dict[str, Any],
    expected: set[str],
) -> None:
    """With the evidence an engineer would bring: the server's log and its host's files."""
    sim = sim_factory("--scenario", scenario)
    result, path = walk(tmp_path, "--target", sim.url, "--vllm-log", str(sim.log_file),
                        "--host-evidence", str(sim.host_evidence), answers=answers)  # fmt: skip
    assert_walk_exit(result, path)
    # Exactly the scenario's causes: a busy machine keeps the client off the CPU (contended, a
    # note on the round), which is no cause of the incident.
    assert causes(path) == expected


@pytest.mark.parametrize(
    ("scenario", "expected"), [("healthy", set()), ("queue-saturation", {"queue_saturation"})]
)
def test_queueing_is_told_from_the_load_contrast_with_the_servers_stats_off(
    sim_factory: SimFactory, tmp_path: Path, scenario: str, expected: set[str]
) -> None:
    """With --disable-log-stats /metrics has no waiting count and no queue time: the queue shows
    as TTFT growing under load while TPOT stays flat, and a healthy server shows no such thing."""
    sim = sim_factory("--scenario", scenario, "--disable-log-stats")
    book_path = playbook_with_probes_only(tmp_path, ("measure",))
    book = yaml.safe_load(book_path.read_text(encoding="utf-8"))
    for node in book["nodes"].values():  # the rounds the contrast reads, and the noise band
        node["probes"] = [p for p in node["probes"] if p["as"] in ("direct", "direct_aa", "loaded")]
    book_path.write_text(yaml.safe_dump(book, allow_unicode=True), encoding="utf-8")
    result, path = walk(tmp_path, "--target", sim.url, "--playbook", str(book_path), answers=QUICK)
    assert_walk_exit(result, path)
    loaded = next(e["data"]["facts"] for e in transcript.load(path).events
                  if e["type"] == "probe_result" and e["data"]["as"] == "loaded")  # fmt: skip
    assert loaded["server"] == {"available": False}
    assert causes(path) == expected


def test_host_evidence_finds_too_few_cores_and_hidden_gpus(
    sim_factory: SimFactory, tmp_path: Path
) -> None:
    """TP 4 on a host with 4 physical cores (needs 2 + 4) where only GPUs 0 and 1 are visible."""
    sim = sim_factory("--tensor-parallel-size", "4", "--host-cores", "4",
                      "--host-visible-devices", "0,1")  # fmt: skip
    result, path = walk(tmp_path, "--target", sim.url, "--vllm-log", str(sim.log_file),
                        "--host-evidence", str(sim.host_evidence), answers=QUICK)  # fmt: skip
    assert_walk_exit(result, path)
    found = causes(path)
    assert found == {"cpu_cores_insufficient", "cuda_visible_devices"}, found
    evidence = {e["data"]["code"]: e["data"]["evidence"] for e in transcript.load(path).events
                if e["type"] == "finding"}  # fmt: skip
    assert evidence["LAT030"].startswith("4 physical cores for 4 GPU(s)")
    assert "CUDA_VISIBLE_DEVICES=0,1 (2 GPU(s))" in evidence["LAT044"]
    # Each default says which evidence it came from (shown live and kept in the transcript).
    questions = {e["data"]["id"]: e["data"] for e in transcript.load(path).events
                 if e["type"] == "question"}  # fmt: skip
    assert (questions["gpus"]["default"], questions["gpus"]["default_from"]) == (
        4,
        "vllmlog.gpus_used",
    )
    assert questions["physical_cores"]["default_from"] == "host.gpu_host.physical_cores"
    # The log's TP 4 on a host with 4 GPUs (two of them visible): one node.
    assert (questions["nodes"]["default"], questions["nodes"]["default_from"]) == (
        1,
        "vllmlog.nodes_spanned",
    )
    # The log answers the question: shown with its source, not asked.
    assert "GPUs: 4  (from the evidence: vLLM log: GPUs used; not asked)" in result.stdout
    assert questions["gpus"]["asked"] is False


def test_the_documented_multi_node_layout_is_no_finding(
    sim_factory: SimFactory, tmp_path: Path
) -> None:
    """tp 2 x pp 2 over two nodes of two NVLinked GPUs (tp = GPUs per node, pp = nodes): the
    walk reads two nodes from the evidence and raises no layout finding (P4.4 used to fire on
    any multi-node layout)."""
    sim = sim_factory("--tensor-parallel-size", "2", "--pipeline-parallel-size", "2",
                      "--nodes", "2")  # fmt: skip
    result, path = walk(tmp_path, "--target", sim.url, "--vllm-log", str(sim.log_file),
                        "--host-evidence", str(sim.host_evidence), answers=QUICK)  # fmt: skip
    assert_walk_exit(result, path)
    answers = {e["data"]["id"]: e["data"]["value"] for e in transcript.load(path).events
               if e["type"] == "answer"}  # fmt: skip
    assert (
        answers["nodes"],
        answers["tensor_parallel_size"],
        answers["pipeline_parallel_size"],
    ) == (2, 2, 2)
    assert causes(path) == set()


def test_without_evidence_the_operator_answers_for_the_topology(
    sim_factory: SimFactory, tmp_path: Path
) -> None:
    sim = sim_factory("--scenario", "tp-over-pcie")
    answers = {**QUICK, "tensor_parallel_size": 4, "interconnect": "pcie"}
    result, path = walk(tmp_path, "--target", sim.url, answers=answers)
    assert_walk_exit(result, path)
    assert "tp_without_nvlink" in causes(path)
    # Without the log the budget direction is not claimed: no TTFT-bound finding on a guess.
    sim = sim_factory("--scenario", "batch-budget-small")
    result, path = walk(tmp_path, "--target", sim.url, answers=QUICK)
    assert_walk_exit(result, path)
    assert "batched_tokens_hurts_ttft" not in causes(path)


def test_a_server_that_did_not_start_is_diagnosed_from_its_log(
    sim_factory: SimFactory, tmp_path: Path
) -> None:
    from wizard.levers.nginx_runner import free_port

    log = tmp_path / "vllm.log"
    port = free_port()
    started = subprocess.run(
        wizard_command("sim", "--scenario", "chunked-prefill-off-bad-budget", "--port", str(port),
                       "--quiet", "--log-file", str(log)),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert started.returncode != 0 and "is smaller than max_model_len" in started.stderr
    result, path = walk(tmp_path, "--target", f"http://127.0.0.1:{port}", "--vllm-log", str(log))
    assert_walk_exit(result, path)
    assert causes(path) == {"chunked_prefill_budget"}
    assert "reading the server's log instead" in result.stderr
    finding = next(e["data"] for e in transcript.load(path).events if e["type"] == "finding")
    assert "2048" in finding["evidence"] and "8192" in finding["evidence"]
    # It cites the line with vLLM's message, not the generic failure line before it.
    cited = int(finding["evidence"].split("(log line ", 1)[1].split(")", 1)[0])
    assert "is smaller than max_model_len" in log.read_text().splitlines()[cited - 1]
    # Without the log the same walk refuses in one line and says what would help.
    result, _ = walk(tmp_path, "--target", f"http://127.0.0.1:{port}")
    assert result.returncode == 1 and "--vllm-log" in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1


def test_auth_failure_is_diagnosed_and_the_key_never_leaks(
    sim_factory: SimFactory, tmp_path: Path
) -> None:
    canary = "canary-key-5f9c2e"
    sim = sim_factory("--scenario", "auth-required", env={"VLLM_API_KEY": canary})
    result, path = walk(tmp_path, "--target", sim.url, answers=QUICK, env={"VLLM_API_KEY": ""})
    assert_walk_exit(result, path)
    assert causes(path) == {"auth_failure"}
    # With the key the same walk is clean, and the key is nowhere: transcript, exports, output.
    result, path = walk(tmp_path, "--target", sim.url, answers=QUICK, env={"VLLM_API_KEY": canary})
    assert assert_walk_exit(result, path)["outcome"] == "no_cause" and causes(path) == set()
    outputs = [result.stdout, result.stderr, path.read_text()]
    for fmt in ("md", "html", "json", "text"):
        exported = subprocess.run(wizard_command("export", str(path), "--format", fmt),
                                  capture_output=True, text=True, timeout=60)  # fmt: skip
        outputs += [exported.stdout, exported.stderr]
    replayed = subprocess.run(
        wizard_command("replay", str(path)), capture_output=True, text=True, timeout=60
    )
    outputs += [replayed.stdout, replayed.stderr]
    assert all(canary not in text for text in outputs)


def test_no_terminal_and_no_operator_is_a_usage_error(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    result = subprocess.run(wizard_command("run", "--target", healthy_sim.url), capture_output=True,
                            text=True, timeout=60, stdin=subprocess.DEVNULL)  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        "latency-wizard run: error: no terminal to ask questions on: pass --auto or --answers FILE"
    ]


def test_unreachable_target_fails_in_one_line_and_writes_nothing(tmp_path: Path) -> None:
    from wizard.levers.nginx_runner import free_port

    result, path = walk(tmp_path, "--target", f"http://127.0.0.1:{free_port()}")
    assert result.returncode == 1
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot reach http://127.0.0.1:" in lines[0]
    assert not path.exists()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("nonsense_question: 3\n", "unknown question id or finding code 'nonsense_question'"),
        ("gpus: many\n", "answer to 'gpus' must be a number"),
        ("interconnect: infiniband\n", "must be one of nvlink, pcie, mixed, single, unknown"),
        ("LAT010: maybe\n", "a change decision is 'apply', 'skip' or a mapping"),
        ("gpus: [1\n", "invalid YAML in answers file"),
        ("- a\n- b\n", "an answers file maps question ids"),
        # Hostile answers files (issue #15): each was a traceback before.
        ("gpus: 1" + "0" * 400 + "\n", "answer to 'gpus' must be a number"),
        ("gpus: 1" + "0" * 5000 + "\n", "a value in the answers file cannot be read"),
        ("gpus: .inf\n", "answer to 'gpus' must be a number"),
        ("gpus: 2024-13-45\n", "a value in the answers file cannot be read"),
        ("gpus: \xff\xfe\n", "not UTF-8 text"),
        # A key pasted under the wrong question is never echoed.
        ("gpus: sk-canary-7f3a9\n", "must be a number, got a text of 15 characters"),
        # ... nor pasted where a question id goes (it was quoted back), and a bad value names
        # the file it is in (found trying the README as a new user).
        ("sk-canary-7f3a9: yes\n", "(a key of 15 characters, not shown: it may be a secret)"),
        ("run_loadgen: maybe\n", "answers.yaml: answer to 'run_loadgen' must be yes or no"),
    ],
)
def test_bad_answers_files(
    healthy_sim: SimProcess, tmp_path: Path, content: str, message: str
) -> None:
    answers = tmp_path / "answers.yaml"
    answers.write_bytes(content.encode("latin-1") if "\xff" in content else content.encode())
    result = subprocess.run(
        wizard_command("run", "--target", healthy_sim.url, "--answers", str(answers),
                       "--transcript", str(tmp_path / "t.ndjson")),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    assert message in result.stderr and "Traceback" not in result.stderr
    assert len(result.stderr.strip().splitlines()) == 1 and "canary" not in result.stderr
    assert not (tmp_path / "t.ndjson").exists()


def test_unwritable_transcript_directory(healthy_sim: SimProcess, tmp_path: Path) -> None:
    locked = tmp_path / "locked"
    locked.mkdir()
    target = locked / "sub" / "t.ndjson"
    (locked / "sub").write_text("a file where a directory should be")
    result = subprocess.run(
        wizard_command("run", "--target", healthy_sim.url, "--auto", "--transcript", str(target)),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1 and "cannot write the transcript" in lines[0]


def test_a_step_naming_two_parameters_is_refused(sim_factory: SimFactory, tmp_path: Path) -> None:
    sim = sim_factory("--scenario", "kv-pressure")
    two = {
        "layer": "vllm",
        "parameter": "gpu_memory_utilization, max_num_seqs",
        "before": "0.73",
        "after": "0.95",
    }
    result, path = walk(tmp_path, "--target", sim.url, answers={**QUICK, "LAT010": two})
    assert_walk_exit(result, path)
    events = transcript.load(path).events
    notes = [e["data"]["text"] for e in events if e["type"] == "note"]
    assert any("is not one parameter name; one change per round" in n for n in notes)
    assert not [e for e in events if e["type"] == "change"]


@pytest.mark.parametrize(
    ("parameter", "after"),
    [
        ("gpu_memory_utilization, max_num_seqs", "0.95"),
        ("gpu_memory_utilization;max_num_seqs", "0.95"),  # passed the old substring guard
        ("gpu_memory_utilization+max_num_seqs", "0.95"),  # passed the old substring guard
        ("gpu_memory_utilization and max_num_seqs", "0.95"),
        ("gpu_memory_utilization", "0.95 --max-num-seqs 64"),  # two flags in one value
        ("proxy_buffering", "off; gzip off"),  # two directives in one value
        ("max_num_seqs", "8 and 16"),
    ],
)
def test_one_change_guard_refuses_every_way_of_naming_two(parameter: str, after: str) -> None:
    from wizard.levers.one_parameter import more_than_one_change

    assert more_than_one_change(parameter, after)


@pytest.mark.parametrize(
    ("parameter", "after"),
    [("max_num_seqs", "8"), ("--max-num-seqs", "8"), ("gzip_types", "text/html text/plain"),
     ("proxy_buffering", "off;"), ("VLLM_CPU_KVCACHE_SPACE", "2")],
)  # fmt: skip
def test_one_change_guard_accepts_one(parameter: str, after: str) -> None:
    from wizard.levers.one_parameter import more_than_one_change

    assert more_than_one_change(parameter, after) is None


def test_english_sentences_are_found() -> None:
    assert english_sentences("说明：LAT020：变更未应用（skipped by the answers file）") == [
        "skipped by the answers file"
    ]
    assert english_sentences("<p>变更 <code>change not applied</code> 已拒绝</p>", html=True) == []
    assert (
        english_sentences("MLPerf LoadGen SingleStream，API server，`no NVIDIA driver here`") == []
    )
    # Touching Chinese text is no word boundary for the check (it was: the run went unseen).
    assert english_sentences("loadgen 对比before the changes（loadgen_before）") == [
        "before the changes"
    ]


def test_raw_values_are_found_and_names_are_not() -> None:
    """What the trial saw is caught; code, ids, flags, paths, URLs and units are not."""
    seen = ("fleet (fleet): available=False\n  run_loadgen = True\n[default: None] {'a': 1}\n"
            "ttft_ms improved; from the evidence: nginxconf.locations.0.proxy_read_timeout_s\n"
            "KV peak 0.0011101859561476468, TTFT outside the engine -15.9 ms")  # fmt: skip
    assert raw_values(seen) == ["False", "True", "None", "{'", "nginxconf.locations.0.proxy_read_timeout_s",
                                "run_loadgen", "ttft_ms", "0.0011101859561476468", "-15.9 ms"]  # fmt: skip
    names = ("LAT001 `proxy_buffering off;` max_num_batched_tokens 8,192 tokens, --max-num-seqs, "
             "vllm:num_preemptions_total, /tmp/x_y/vllm.log, https://a.b/c_d, kv_cache_preemption, "
             "direct_aa, TTFT p50 130 -> 22.7 ms (-83 %), CI [-109.2, -106.4], gpus.csv, e.g. this")  # fmt: skip
    assert raw_values(names) == []


def test_chinese_walk(sim_factory: SimFactory, tmp_path: Path) -> None:
    """Issue #13 item 5: a walk in zh and its md, html and text summaries say no English sentence."""
    sim = sim_factory("--scenario", "no-chat-template")
    result, path = walk(tmp_path, "--target", sim.url, "--lang", "zh", answers=QUICK)
    assert_walk_exit(result, path)
    assert "基本规则" in result.stdout and "模型没有 chat template" in result.stdout
    assert "诊断完成" in result.stdout and "通过 baseline：未发现原因" in result.stdout
    assert english_sentences(result.stdout) == []
    # Single English words the sentence check lets through: a round's path ("direct: direct
    # http://..."), the PASS tag, and the empty item list of a node that covers none ("(x; )").
    assert f"direct：直连路径，{sim.url}" in result.stdout and "direct: direct" not in result.stdout
    assert "PASS" not in result.stdout and "; )" not in result.stdout
    # A probe that did not run says why (it said only "its condition does not hold").
    assert "跳过探测 validate（loadgen_before）：没有选择用 LoadGen 验证" in result.stdout
    assert transcript.load(path).header["lang"] == "zh"
    for fmt in ("md", "html", "text"):
        summary = subprocess.run(wizard_command("export", str(path), "--format", fmt),
                                 capture_output=True, text=True, timeout=60)  # fmt: skip
        assert summary.returncode == 0, summary.stderr
        assert "模型没有 chat template" in summary.stdout
        assert english_sentences(summary.stdout, html=fmt == "html") == [], fmt
        if fmt == "md":  # the rounds table names each round's path in words
            assert re.search(r"\| direct \| [^|]* \| 直连 \|", summary.stdout), summary.stdout


def test_evidence_arguments_that_are_wrong_fail_in_one_line(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    for flag, value in (
        ("--vllm-log", str(tmp_path / "missing.log")),
        ("--host-evidence", str(tmp_path / "missing")),
        ("--nginx-conf", str(tmp_path / "missing.conf")),
    ):
        result, path = walk(tmp_path, "--target", healthy_sim.url, flag, value)
        assert result.returncode == 2 and not path.exists()
        assert result.stderr.strip().splitlines() == [
            f"latency-wizard run: error: {flag} {value}: no such file or folder"
        ]


def test_a_log_that_is_not_a_vllm_log_is_said_and_claims_nothing(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    garbage = tmp_path / "garbage.log"
    garbage.write_bytes(os.urandom(20000) + b"\nnginx: [emerg] unknown directive\n")
    result, path = walk(tmp_path, "--target", healthy_sim.url, "--vllm-log", str(garbage),
                        answers=QUICK)  # fmt: skip
    assert_walk_exit(result, path)
    assert causes(path) == set()
    log = next(e["data"]["facts"] for e in transcript.load(path).events
               if e["type"] == "probe_result" and e["data"]["as"] == "vllmlog")  # fmt: skip
    assert log["note"] == "nothing in this input looks like a vLLM log line"
    assert "looks like a vLLM log line" in result.stdout


def test_a_failed_start_in_the_log_of_a_server_that_answers_is_not_todays_state(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    log = tmp_path / "old.log"
    log.write_text(
        "(APIServer pid=1) ERROR 12-01 10:00:01 [api_server.py:2000] ValueError: max_num_batched_tokens "
        "(2048) is smaller than max_model_len (8192). This effectively limits the maximum sequence length.\n"
    )
    result, path = walk(
        tmp_path, "--target", healthy_sim.url, "--vllm-log", str(log), answers=QUICK
    )
    assert_walk_exit(result, path)
    entered = [e["node"] for e in transcript.load(path).events if e["type"] == "node_enter"]
    assert "startup.failed" not in entered and "baseline.direct" in entered
    assert "chunked_prefill_budget" not in causes(path)


def test_preemption_with_memory_already_given_proposes_fewer_sequences(
    sim_factory: SimFactory, tmp_path: Path
) -> None:
    """The same small KV cache as kv-pressure, but the log shows --gpu-memory-utilization 0.95."""
    sim = sim_factory("--scenario", "kv-pressure", "--gpu-memory-utilization", "0.95",
                      "--num-gpu-blocks", "112")  # fmt: skip
    result, path = walk(
        tmp_path, "--target", sim.url, "--vllm-log", str(sim.log_file), answers=QUICK
    )
    assert_walk_exit(result, path)
    codes = {
        e["data"]["code"]: e["data"] for e in transcript.load(path).events if e["type"] == "finding"
    }
    assert "LAT015" in codes and "LAT010" not in codes
    assert codes["LAT015"]["change"]["parameter"] == "max_num_seqs"
    assert "gpu_memory_utilization 0.95" in codes["LAT015"]["evidence"]


def test_a_server_that_is_gone_with_a_clean_log_points_outside_vllm(
    sim_factory: SimFactory, tmp_path: Path
) -> None:
    sim = sim_factory()
    sim.stop()  # stopped from outside (as by the kernel's OOM killer): the log ends cleanly
    result, path = walk(tmp_path, "--target", sim.url, "--vllm-log", str(sim.log_file))
    assert_walk_exit(result, path)
    assert causes(path) == {"server_unreachable"}
    finding = next(e["data"] for e in transcript.load(path).events if e["type"] == "finding")
    assert finding["evidence"].startswith(f"no answer at {sim.url}")


def test_a_change_without_a_computed_value_is_still_offered(
    healthy_sim: SimProcess, tmp_path: Path
) -> None:
    """Without the log or the host's files the budget is unknown: LAT012's change says what to
    read instead of a number, and an operator who made it by hand is heard (the round it rests
    on is measured). The rule fires on anything here: what is tested is what follows."""
    book = playbook_with_rule(tmp_path, "baseline.direct", "LAT012",
                              {"fact": "direct.steady.requests", "ge": 1})  # fmt: skip
    made = {"parameter": "max_num_batched_tokens", "before": 2048, "after": 8192, "layer": "vllm"}
    result, path = walk(tmp_path, "--target", healthy_sim.url, "--playbook", str(book),
                        answers={**QUICK, "LAT012": made})  # fmt: skip
    assert_walk_exit(result, path)
    events = transcript.load(path).events
    finding = next(
        e["data"] for e in events if e["type"] == "finding" and e["data"]["code"] == "LAT012"
    )
    assert finding["change"]["after"] is None and "<" in finding["change"]["apply"]
    change = next(e["data"] for e in events if e["type"] == "change")
    assert (change["code"], change["parameter"], change["after"]) == (
        "LAT012",
        "max_num_batched_tokens",
        "8192",
    )
    # Measured once, after the change (long#1); the stage's own visit then keeps its figures.
    assert any(e["type"] == "measurement" and e["data"]["as"] == "long" for e in events)
    assert any(e["type"] == "verdict" and e["data"]["code"] == "LAT012" for e in events)
