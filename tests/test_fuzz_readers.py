"""Every reader, fuzzed from its own fixtures (issue #15): data or one clear line, never a crash.

For each reader the property is the same: given any input it returns data that prints as JSON
(``allow_nan=False``: what ``--json`` prints must parse) and renders as its human view, or it
raises the project's own error with a one-line message. Anything else (another exception, a
hang past the deadline, output out of proportion to the input) fails the example, and hypothesis
shrinks it to its smallest form. The long run: ``WIZARD_FUZZ_EXAMPLES=10000`` (benchmarks/results/fuzz.md).
"""

from __future__ import annotations

import itertools
import json
import tempfile
from pathlib import Path
from typing import Any

import pytest
import yaml
from hypothesis import given
from hypothesis import strategies as st

from tests.fuzzing import FUZZ, fixture_texts, mutated, mutated_bytes, one_line, rendered
from wizard.errors import WizardError

pytestmark = pytest.mark.timeout(600)


def printable_json(data: Any, source_size: int) -> str:
    """``data`` as the --json output; bounded by the input (a reader copies, it never multiplies)."""
    text = json.dumps(data, allow_nan=False)
    assert len(text) <= 20 * source_size + 200_000, (len(text), source_size)
    return text


def refused(exc: WizardError) -> None:
    assert one_line(str(exc)), repr(str(exc))


# -- vLLM logs -----------------------------------------------------------------------------------

LOGS = fixture_texts("vllm-log/**/*.log", "vllm-log/**/*.txt")
LOG_TOKENS = (
    "INFO 01-01 00:00:00 ", "(EngineCore_DP0 pid=1) ", "Engine 000: ", "GPU KV cache size: ",
    "Maximum concurrency for ", " tokens per request: ", "non-default args: {", "Using max model len ",
    "Avg prompt throughput: ", "Running: ", " reqs, Waiting: ", "GPU KV cache usage: ", "%",
    "tensor_parallel_size=", "max_num_batched_tokens=", "Loading weights took ", " secs",
    "Traceback (most recent call last):\n", "torch.OutOfMemoryError", "{'max_model_len': ",
)  # fmt: skip


@FUZZ
@given(mutated(LOGS, LOG_TOKENS))
def test_vllm_log(text: str) -> None:
    from wizard.cli.probe import _vllm_log_summary
    from wizard.probes.readers.vllm_log import read_lines, walk_facts

    report = read_lines(text.splitlines(keepends=True))
    printable_json(report, len(text))
    printable_json(walk_facts(report), len(text))
    _vllm_log_summary(report)


# The block reader (``read_text``, what ``probe vllm-log`` and the walk use) reads a steady run's
# lines only where its scan finds something: the same report as line by line, whatever the block
# size (lines cut across blocks), with glued lines, pasted manifests and restarts spliced in.
SCAN_TOKENS = (
    *LOG_TOKENS, "xINFO 01-01 00:00:00 ", "x(APIServer pid=1) INFO 01-01 00:00:00 ", "\n  args:\n",
    "\n- --max-num-seqs=4\n", "\nvllm serve m --max-num-seqs 4 \\\n", "Starting vLLM server on ",
    "args: Namespace(max_num_seqs=3)", "\u2588 version 0.9.0", "Initializing a V1 LLM engine (v0.34.0) with config: ",
)  # fmt: skip


@FUZZ
@given(mutated(LOGS, SCAN_TOKENS), st.integers(1, 400))
def test_vllm_log_blocks_read_as_lines(text: str, block_chars: int) -> None:
    import io

    from wizard.probes.readers import vllm_log

    by_lines = vllm_log.read_lines(io.StringIO(text))
    assert vllm_log.read_text(io.StringIO(text), block_chars) == by_lines


# -- /metrics ------------------------------------------------------------------------------------

METRICS = fixture_texts("metrics/*.txt")
METRIC_TOKENS = (
    "# TYPE vllm:time_to_first_token_seconds histogram\n", "vllm:time_to_first_token_seconds_sum ",
    "vllm:time_to_first_token_seconds_count ", 'vllm:inter_token_latency_seconds_bucket{le="',
    'vllm:cache_config_info{num_gpu_blocks="', '",block_size="', '"} 1\n', '{engine="0"} ',
    "vllm:num_requests_running ", "vllm:kv_cache_usage_perc ", "# HELP x y\n", "_total ",
)  # fmt: skip


@FUZZ
@given(mutated(METRICS, METRIC_TOKENS))
def test_metrics(text: str) -> None:
    from wizard.probes.readers.metrics import delta, parse

    try:
        snapshot = parse(text)
    except WizardError as exc:
        refused(exc)
        return
    printable_json(snapshot.to_dict(), len(text))
    printable_json(delta(snapshot, snapshot, 1.0), len(text))


# -- nginx configs -------------------------------------------------------------------------------

NGINX = fixture_texts("nginx/*.txt", "nginx/*.conf", "nginx/*.template", "nginx/**/*.conf")
NGINX_TOKENS = (
    "include conf.d/*.conf;\n", "include *;\n", "include nginx.conf;\n", "include /etc/nginx/*;\n",
    "# configuration file /etc/nginx/conf.d/a.conf:\n", "http {", "server {", "location / {", "}",
    ";", "proxy_pass http://127.0.0.1:8000;", "proxy_buffering off;", "proxy_read_timeout 1m30s;",
    "proxy_read_timeout ", "proxy_http_version 1.1;", "gzip on;", "gzip_types text/event-stream;",
    "proxy_ignore_headers X-Accel-Buffering;", "nginx version: nginx/1.29.7\n", "upstream u {",
)  # fmt: skip


def _analysed(source: Path, size: int) -> None:
    from wizard.probes.readers.nginx_config import analyse
    from wizard.ui.render import nginx_config_view

    try:
        report = analyse(source, worst_gap_ms=250.0)
    except WizardError as exc:
        refused(exc)
        return
    printable_json(report, size)
    rendered(nginx_config_view(report))
    rendered(nginx_config_view(report, "zh"))  # said again from the report's fields: any report


@FUZZ
@given(mutated(NGINX, NGINX_TOKENS))
def test_nginx_config_file(text: str) -> None:
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "nginx.conf"
        path.write_text(text, encoding="utf-8", errors="surrogateescape")
        _analysed(path, len(text))


@FUZZ
@given(st.lists(mutated(NGINX, NGINX_TOKENS), min_size=1, max_size=4))
def test_nginx_config_folder(texts: list[str]) -> None:
    # nginx.conf and conf.d/*.conf, which the fixtures' includes name (and may name themselves).
    names = ["nginx.conf", *(f"conf.d/{i}.conf" for i in range(len(texts) - 1))]
    with tempfile.TemporaryDirectory() as tmp:
        for name, text in zip(names, texts, strict=True):
            (Path(tmp) / name).parent.mkdir(exist_ok=True)
            (Path(tmp) / name).write_text(text, encoding="utf-8", errors="surrogateescape")
        _analysed(Path(tmp), sum(map(len, texts)))


# -- host evidence and topology ------------------------------------------------------------------

TOPOLOGIES = fixture_texts("host/topo*.txt")
TOPOLOGY_TOKENS = ("GPU0", "GPU1", "GPU7", "NIC0", "X", "NV12", "SYS", "PIX", "OK", "\t", " | ",
                   "> ", "Legend:", "CPU Affinity", "NUMA Affinity", "0-55,112-167")  # fmt: skip


@FUZZ
@given(mutated(TOPOLOGIES, TOPOLOGY_TOKENS), st.sampled_from([None, "", "0,1", "GPU-1", "7,x"]))
def test_topology(text: str, visible: str | None) -> None:
    from wizard.probes.readers.topology import interconnect, parse_topology

    topology = parse_topology(text)
    topology["interconnect"] = interconnect(topology, visible)
    printable_json(topology, len(text))


HOST = [
    *fixture_texts("host/*.txt"),
    "CUDA_VISIBLE_DEVICES=0,1\nPATH=/usr/bin\n",
    "name, memory.total [MiB]\nNVIDIA H100 80GB HBM3, 81559 MiB\n",
]
HOST_TOKENS = ("CPU(s):", "Core(s) per socket:", "Socket(s):", "GPU 0: ", " (UUID: GPU-1)",
               "memory.total", " MiB", "GB", "export CUDA_VISIBLE_DEVICES=\"", "Legend")  # fmt: skip


@FUZZ
@given(st.lists(mutated(HOST, HOST_TOKENS), min_size=0, max_size=4))
def test_host_evidence(texts: list[str]) -> None:
    from wizard.probes.readers.host import gather

    with tempfile.TemporaryDirectory() as tmp:
        for i, text in enumerate(texts):
            (Path(tmp) / f"e{i}.txt").write_text(text, encoding="utf-8", errors="surrogateescape")
        printable_json(gather(tmp), sum(map(len, texts)))


# -- answers files -------------------------------------------------------------------------------


def _playbook() -> Any:
    from wizard import playbook

    return playbook.load()


PLAYBOOK = _playbook()
QUESTIONS = sorted(q.id for node in PLAYBOOK.nodes.values() for q in node.ask)
ANSWERS = yaml.safe_dump(
    {"gpus": 2, "physical_cores": 16, "interconnect": "nvlink", "restarted": True,
     "nginx_dump": "/tmp/nginx-T.txt", "proxy_read_timeout_s": 60, "LAT001": "apply",
     "LAT010": {"layer": "vllm", "parameter": "max_num_seqs", "before": 256, "after": 128}}
)  # fmt: skip


def _nested(inner: st.SearchStrategy[Any]) -> st.SearchStrategy[Any]:
    return st.lists(inner, max_size=3) | st.dictionaries(st.text(max_size=5), inner, max_size=3)


VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats() | st.text(max_size=20),
    _nested,
    max_leaves=8,
)


def _scripted(raw: bytes) -> None:
    from wizard.walk.operator import ScriptedOperator

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "answers.yaml"
        path.write_bytes(raw)
        try:
            ScriptedOperator.from_file(path, PLAYBOOK)
        except WizardError as exc:
            refused(exc)


@FUZZ
@given(mutated_bytes([ANSWERS], ("gpus: ", "LAT001: ", ": ", "- ", "&a ", "*a", "!!python/", "? ")))
def test_answers_file_text(raw: bytes) -> None:
    _scripted(raw)


@FUZZ
@given(st.dictionaries(st.sampled_from([*QUESTIONS, "LAT001", "LAT010", "unknown"]), VALUES))
def test_answers_file_values(answers: dict[str, Any]) -> None:
    _scripted(yaml.safe_dump(answers).encode())


# -- SSE -----------------------------------------------------------------------------------------


def _sse_seeds() -> list[str]:
    from tests.faultserver import chat_chunk, event, text_chunk, usage_chunk

    completions = b"".join(text_chunk(f" w{i}", usage=i + 1) for i in range(4))
    chat = chat_chunk({"role": "assistant", "content": ""}) + b"".join(
        chat_chunk({"content": f" w{i}"}) for i in range(3)
    )
    tools = chat_chunk({"tool_calls": [{"index": 0, "function": {"arguments": "{}"}}]})
    error = event({"error": {"message": "boom", "code": 500}})
    done = text_chunk(" z", "length", usage=5) + usage_chunk(5) + event(b"[DONE]")
    return [
        (completions + done).decode(),
        (chat + usage_chunk(3) + event(b"[DONE]")).decode(),
        (tools + b": keep-alive\n\n" + error + done).decode(),
    ]


SSE_TOKENS = ("data: ", "data:", "\n\n", "\r\n", ": ping\n\n", "[DONE]", '"usage": ',
              '{"completion_tokens": ', '"choices": ', '"delta": ', '"text": ')  # fmt: skip


@FUZZ
@given(
    mutated_bytes(_sse_seeds(), SSE_TOKENS),
    st.lists(st.integers(0, 10_000), max_size=12),
    st.integers(1, 64),
    st.sampled_from([None, 0.5, 300.0]),
)
def test_sse_events_split_anywhere(
    raw: bytes, cuts: list[int], max_tokens: int, deadline_s: float | None
) -> None:
    from wizard.probes.http.sample import StreamSample
    from wizard.probes.http.sse import (
        OversizedEventError,
        OversizedStreamError,
        SseParser,
        event_limit,
    )
    from wizard.probes.http.stream import stream_report

    sample = StreamSample(send_ns=0)
    parser = SseParser(sample, max_tokens=max_tokens, deadline_s=deadline_s)
    bounds = [0, *sorted(c % (len(raw) + 1) for c in cuts), len(raw)]
    try:
        for now, (start, end) in enumerate(itertools.pairwise(bounds), start=1):
            parser.feed(raw[start:end], now * 1_000_000)
    except (OversizedEventError, OversizedStreamError) as exc:  # an event flood stops here
        assert one_line(str(exc))
    report = stream_report([sample])
    printable_json(report, len(raw))
    assert len(sample.itl_per_token_ms or []) <= max_tokens
    assert len(sample.output_times_ns) <= sample.events <= event_limit(max_tokens)


# -- playbook YAML -------------------------------------------------------------------------------

SMALL_PLAYBOOKS = fixture_texts("playbooks/*.yaml")


@FUZZ
@given(
    mutated(SMALL_PLAYBOOKS, ("&a ", "*a", "<<: *a\n", "- ", ": ", "{en: x, zh: y}", "!!python/"))
)
def test_playbook_text(text: str) -> None:
    from wizard import playbook

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "book.yaml"
        path.write_text(text, encoding="utf-8", errors="surrogatepass")
        try:
            playbook.load(path)
        except playbook.PlaybookError as exc:  # every problem on its own line, each file:line
            assert exc.problems and all(one_line(p) for p in exc.problems), exc.problems
            assert all(p.startswith(f"{path}:") for p in exc.problems), exc.problems


# -- transcripts, raw ----------------------------------------------------------------------------

EXAMPLES_DIR = Path(__file__).parent.parent / "transcripts" / "examples"
# Whole small transcripts and the first lines of the large ones (each line is hashed: a 300 KB
# seed would spend the deadline on sha256).
TRANSCRIPTS = [
    "".join(p.read_text(encoding="utf-8").splitlines(keepends=True)[:40])
    for p in sorted([*EXAMPLES_DIR.glob("*.ndjson"), *(Path(__file__).parent / "fixtures" /
                                                        "transcripts").glob("*.ndjson")])
]  # fmt: skip


@FUZZ
@given(mutated_bytes(TRANSCRIPTS, ('"seq": ', '"prev": "', '"type": "', '"data": ', "null")),
       st.booleans())  # fmt: skip
def test_transcript_raw(raw: bytes, salvage: bool) -> None:
    from wizard.record import transcript

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "t.ndjson"
        path.write_bytes(raw)
        try:
            transcript.load(path, salvage=salvage)
        except transcript.TranscriptError as exc:
            refused(exc)
