"""Hostile input to every reader (issue #15): each case was an uncaught exception or a hang.

A reader given input it cannot use says so in one line (a WizardError) or reads it as unknown;
it never raises anything else, and it never takes more than linear time.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from tests.forge import write_rechained
from wizard.errors import WizardError
from wizard.probes.readers import host, metrics, nginx_config, vllm_log
from wizard.ui.render import nginx_config_view

# A quadratic pattern over this many digits takes minutes; a linear one, milliseconds.
LONG_DIGITS = "7" * 200_000


@pytest.mark.timeout(60)
def test_gpu_list_with_a_long_run_of_digits_is_read_in_linear_time() -> None:
    for text in (
        f"name, memory.total [MiB]\nH100, {LONG_DIGITS}\n",
        f"GPU 0: NVIDIA H{LONG_DIGITS} (UUID: GPU-1)\n",
        f"name, memory.total [MiB]\nA{LONG_DIGITS}GB, x MiB\n",
    ):
        assert host.parse_gpu_list(text)["gpu_memory_gib"] is None
    assert host.parse_gpu_list("name, memory.total [MiB]\nNVIDIA H100, 81559 MiB\n") == {
        "gpu_names": ["NVIDIA H100"], "gpus": 1, "gpu_memory_gib": 79.6,
    }  # fmt: skip


def test_lscpu_with_absurd_counts_leaves_them_unknown() -> None:
    huge = "9" * 4000  # two of these multiplied cannot even be printed (int -> str limit)
    assert (
        host.parse_lscpu(f"CPU(s): {huge}\nCore(s) per socket: {huge}\nSocket(s): {huge}\n") == {}
    )
    assert host.parse_lscpu("CPU(s): ²\nCore(s) per socket: 8\n") == {"physical_cores": 8}


@pytest.mark.parametrize(
    "text",
    [
        "vllm:num_requests_running 1e999\n",  # infinity: no count, and invalid JSON
        "vllm:num_requests_running NaN\n",
        "vllm:num_requests_running 1 " + "9" * 5000 + "\n",  # a timestamp past int's limit
        "# TYPE vllm:time_to_first_token_seconds histogram\nvllm:time_to_first_token_seconds_count 3\n",
        "# TYPE vllm:time_to_first_token_seconds histogram\nvllm:time_to_first_token_seconds_sum 3\n",
        '# TYPE vllm:inter_token_latency_seconds histogram\nvllm:inter_token_latency_seconds_bucket{le="x"} 3\n',
        'vllm:cache_config_info{num_gpu_blocks="²",block_size="' + "9" * 5000 + '"} 1\n',
        "vllm:num_requests_running 1" + "9" * 400 + "\n",  # an int past float (the long fuzz run)
        "vllm:num_requests_running 1e308\nvllm:num_requests_running 1e308\n",  # a sum past it
    ],
    ids=["inf", "nan", "timestamp", "no-sum", "no-count", "bucket", "labels", "int", "sum"],
)
def test_metrics_with_numbers_that_do_not_fit(text: str) -> None:
    try:
        snapshot = metrics.parse(text)
    except WizardError as exc:
        assert "not valid Prometheus text" in str(exc)
        return
    data = snapshot.to_dict()
    assert data["ttft_s"] == {} and data["num_gpu_blocks"] is None and data["block_size"] is None
    assert data["running"] in (None, 1.0, 1e308) and data["itl_smallest_bucket_s"] is None
    json.dumps(data, allow_nan=False)  # what --json prints parses


@pytest.mark.timeout(60)
def test_metrics_line_with_a_long_run_of_digits_is_skipped_in_linear_time() -> None:
    # The long fuzz run's slow /metrics input: a sample's value followed by thousands of digits
    # and then one character that makes the line no sample (9 s to read at 12,000 digits).
    text = (
        f"vllm:num_requests_running 1.{LONG_DIGITS}x\nvllm:num_requests_running 1{LONG_DIGITS}x\n"
    )
    with pytest.raises(WizardError, match=r"no samples in it .*skipped 2 line"):
        metrics.parse(text)
    assert metrics.parse(f"vllm:num_requests_running 1.{LONG_DIGITS}\n").running is not None


def test_metrics_deltas_past_a_floats_range_are_unknown() -> None:
    # A hostile server's counters, from -1e308 to 1e308 between two scrapes, over a short window.
    before = metrics.parse("vllm:num_preemptions_total -1e308\n")
    after = metrics.parse("vllm:num_preemptions_total 1e308\n")
    change = metrics.delta(before, after, 1e-3)
    assert change["preemptions"] is None and change["preemptions_per_s"] is None
    json.dumps(change, allow_nan=False)


@pytest.mark.parametrize(
    "line",
    [
        "INFO 01-01 00:00:00 Using max model len " + "9" * 5000,
        "INFO 01-01 00:00:00 GPU KV cache size: " + "9" * 400 + " tokens",
        "INFO 01-01 00:00:00 Maximum concurrency for " + "9" * 400 + " tokens per request: 2.0x",
        "INFO 01-01 00:00:00 Loading weights took 1.2.3 s",
        "INFO 01-01 00:00:00 Graph capturing finished in ... secs",
        "INFO 01-01 00:00:00 Engine 000: Avg prompt throughput: 1.2.3 tokens/s, Avg generation "
        "throughput: 0.0 tokens/s, Running: 1 reqs, Waiting: 0 reqs, GPU KV cache usage: 1..%",
        "INFO 01-01 00:00:00 Engine 000: Avg prompt throughput: 1.0 tokens/s, Avg generation "
        "throughput: 0.0 tokens/s, Running: "
        + "9" * 5000
        + " reqs, Waiting: 0 reqs, GPU KV cache usage: 1.0%",
        "INFO 01-01 00:00:00 non-default args: {'max_model_len': 'huge', 'model': 3, 'enforce_eager': 'yes'}",
        "INFO 01-01 00:00:00 Initializing a V1 LLM engine with config: tensor_parallel_size="
        + "9" * 5000,
        "ERROR 01-01 00:00:00 max_num_batched_tokens (" + "9" * 5000 + ") is smaller than "
        "max_model_len (" + "9" * 5000 + ")",
        "INFO 07-08 07:16:55 api_server.py:206] vLLM API server version " + "9" * 5000 + ".1.0",
    ],
    ids=[
        "len",
        "kv",
        "concurrency",
        "weights",
        "graphs",
        "stats",
        "stats-int",
        "args",
        "config",
        "error",
        "version",
    ],
)
def test_vllm_log_numbers_that_do_not_parse_are_unknown(line: str) -> None:
    report = vllm_log.read_lines([line])
    for key in ("max_model_len", "kv_cache_tokens", "max_concurrency_tokens_per_request",
                "weights_load_s", "graph_capture_s", "tensor_parallel_size",
                "max_num_batched_tokens", "model", "enforce_eager"):  # fmt: skip
        assert report[key] is None, key
    assert report["stats"] == []


def _config(tmp_path: Path, files: dict[str, str]) -> Path:
    """A config directory (its nginx.conf is the root; includes resolve among its *.conf)."""
    for name, text in files.items():
        (tmp_path / name).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / name).write_text(text)
    return tmp_path


@pytest.mark.timeout(60)
@pytest.mark.parametrize(
    ("files", "message"),
    [
        # A glob that matches the file it is in: two of them took 26 s, three took hours.
        (
            {"nginx.conf": "http { include conf.d/*.conf; }\n",
             "conf.d/a.conf": "include conf.d/*.conf;\ninclude conf.d/*.conf;\ninclude conf.d/*.conf;\n"},
            "a.conf:1: include cycle: ",
        ),
        ({"nginx.conf": "include nginx.conf;\n"}, "nginx.conf:1: include cycle: "),
        ({"nginx.conf": "http { include b.conf; }\n", "b.conf": "include c.conf;\n",
          "c.conf": "include b.conf;\n"}, "c.conf:1: include cycle: "),
        # No cycle, but every level includes the next twice: 2^20 copies of the last file.
        ({"nginx.conf": "http { include l0.conf; }\n",
          **{f"l{i}.conf": f"include l{i + 1}.conf;\ninclude l{i + 1}.conf;\n" for i in range(20)},
          "l20.conf": "proxy_buffering off;\n"}, "the includes expand to more than"),
    ],
)  # fmt: skip
def test_nginx_include_cycles_and_blow_ups_end_with_one_line(
    tmp_path: Path, files: dict[str, str], message: str
) -> None:
    with pytest.raises(nginx_config.ConfigSyntaxError, match=message) as caught:
        nginx_config.analyse(_config(tmp_path, files))
    assert "\n" not in str(caught.value)


def test_nginx_version_with_thousands_of_digits_is_unknown(tmp_path: Path) -> None:
    # Found by tests/test_fuzz_readers.py: int() refused the 5,000-digit version (ValueError).
    (tmp_path / "nginx.conf").write_text(
        "# nginx version: nginx/" + "9" * 5000 + "1.22.1\nhttp { }\n"
    )
    assert nginx_config.analyse(tmp_path)["nginx_version"] is None
    (tmp_path / "nginx.conf").write_text("# nginx version: nginx/1.29.12\nhttp { }\n")
    assert nginx_config.analyse(tmp_path)["nginx_version"] == "1.29.12"


def test_nginx_same_file_included_twice_is_no_cycle(tmp_path: Path) -> None:
    source = _config(tmp_path, {
        "nginx.conf": "http { server { location /a { include p.conf; proxy_pass http://u; }\n"
                      "location /b { include p.conf; proxy_pass http://u; } } }\n",
        "p.conf": "proxy_buffering off;\n",
    })  # fmt: skip
    report = nginx_config.analyse(source)
    assert [loc["proxy_buffering"] for loc in report["locations"]] == ["off", "off"]


def test_nginx_timeout_that_does_not_parse_is_shown_as_unknown(tmp_path: Path) -> None:
    source = _config(tmp_path, {
        "nginx.conf": "http { server { location / { proxy_pass http://u;\n"
                      "proxy_read_timeout forever; proxy_connect_timeout " + "9" * 400 + "; } } }\n",
    })  # fmt: skip
    report = nginx_config.analyse(source / "nginx.conf")
    location = report["locations"][0]
    assert location["proxy_read_timeout_s"] is None and location["proxy_connect_timeout_s"] is None
    from rich.console import Console

    console = Console(width=200, record=True)
    console.print(nginx_config_view(report))
    assert "?/?" in console.export_text()


@pytest.mark.parametrize(
    ("header", "event", "message"),
    [
        ({"type": "header", "schema_version": None}, None, ":1: not a latency-wizard transcript header"),
        ({"type": "header", "schema_version": "1"}, None, ":1: not a latency-wizard transcript header"),
        ({"type": "header", "schema_version": 1},
         {"t": "x", "type": "note", "node": None, "data": "text"}, ":2: event field 'data'"),
        ({"type": "header", "schema_version": 1},
         {"t": "x", "node": None, "data": {}}, ":2: event field 'type'"),
        ({"type": "header", "schema_version": 1},
         {"t": "x", "type": "note", "node": 5, "data": {}}, ":2: event field 'node'"),
    ],
)  # fmt: skip
def test_transcripts_that_verify_but_are_not_ours_end_with_one_line(
    tmp_path: Path, header: dict[str, object], event: dict[str, object] | None, message: str
) -> None:
    from wizard.record import transcript

    path = write_rechained(tmp_path / "t.ndjson", header, [event] if event else [])
    with pytest.raises(transcript.TranscriptError, match=message):
        transcript.load(path)


def test_a_transcript_nested_too_deep_is_damaged_not_a_recursion_error(tmp_path: Path) -> None:
    from wizard.record import transcript

    path = tmp_path / "t.ndjson"
    path.write_text(
        '{"type": "header", "schema_version": 1}\n' + "[" * 100_000 + "]" * 100_000 + "\n"
    )
    with pytest.raises(transcript.TranscriptError, match=":2: not JSON"):
        transcript.load(path)


def test_pasted_manifests_and_commands_cannot_blow_up() -> None:
    from wizard.probes.readers.vllm_args import flow_list
    from wizard.probes.readers.vllm_log import read_lines

    # YAML aliases in an inline list are text, never expanded (a loader would build 2^30 items).
    bomb = "[" + ", ".join(f"&a{i} [*a{i - 1}, *a{i - 1}]" for i in range(1, 31)) + "]"
    items = flow_list(bomb)
    assert items is None or sum(map(len, items)) <= len(bomb)
    report = read_lines([
        "        image: vllm/vllm-openai:latest\n",
        f"        args: {bomb}\n",
        "args: Namespace(" + "model='m', " * 5_000 + "max_num_seqs=" + "9" * 5000 + ")\n",
        # Past the reader's line bound (issue #27): skipped, not read.
        "args: Namespace(" + "model='n', " * 50_000 + "max_num_seqs=" + "9" * 5000 + ")\n",
    ])  # fmt: skip
    assert report["max_num_seqs"] is None and report["model"] == "m"
    assert report["notes"][-1] == "line 4: longer than 65,536 characters: skipped"
