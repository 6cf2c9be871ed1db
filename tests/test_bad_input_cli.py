"""Bad input on the command line (issue #13): one line that says what was wrong and what to do,
the documented exit code, and nothing written. Every case runs the real CLI in a subprocess."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import SimProcess, wizard_command
from tests.text_checks import english_sentences
from wizard.cli.probe import NOTHING_MEASURED
from wizard.levers.nginx_runner import free_port


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        wizard_command(*args), capture_output=True, text=True, timeout=120, stdin=subprocess.DEVNULL
    )


def one_line(result: subprocess.CompletedProcess[str]) -> str:
    """The single stderr line of a failed command (and no traceback)."""
    lines = result.stderr.strip().splitlines()
    assert len(lines) == 1, result.stderr
    return lines[0]


def run_nowhere(tmp_path: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], Path]:
    """``run`` against a port where nothing listens: these inputs are refused before any contact."""
    path = tmp_path / "walk.ndjson"
    target = f"http://127.0.0.1:{free_port()}"
    return cli("run", "--target", target, *args, "--transcript", str(path)), path


def test_an_answers_file_that_is_not_utf8(tmp_path: Path) -> None:
    answers = tmp_path / "answers.yaml"
    answers.write_bytes(b"gpus: \xff\xfe\n")
    result, path = run_nowhere(tmp_path, "--answers", str(answers))
    assert result.returncode == 2
    assert one_line(result).endswith(f"{answers}: not UTF-8 text (byte 6)")
    assert not path.exists()


def test_a_negative_gpu_count_is_refused(tmp_path: Path) -> None:
    answers = tmp_path / "answers.yaml"
    answers.write_text("gpus: -38417\n")
    result, path = run_nowhere(tmp_path, "--answers", str(answers))
    assert result.returncode == 2
    assert "answer to 'gpus' must be 0 or more, got a negative number" in one_line(result)
    # An answer is never echoed (it may be a pasted key). The value is one no temporary path holds:
    # "-3" failed in CI only because pytest's folder that day was pytest-313.
    assert "38417" not in result.stderr
    assert not path.exists()


def test_a_folder_as_the_log_and_a_file_as_host_evidence(tmp_path: Path) -> None:
    empty = tmp_path / "logs"
    empty.mkdir()
    result, path = run_nowhere(tmp_path, "--vllm-log", str(empty))
    assert result.returncode == 2
    assert f"--vllm-log {empty}: no log file in this folder" in one_line(result)
    log = tmp_path / "vllm.log"
    log.write_text("INFO 12-02 10:15:00 api_server.py:1 vLLM API server version 0.6.3\n")
    result, path = run_nowhere(tmp_path, "--host-evidence", str(log))
    assert result.returncode == 2
    assert f"--host-evidence {log} is a file: give the folder it is in" in one_line(result)
    assert not path.exists()


def test_a_missing_nginx_config_is_refused_before_the_walk(tmp_path: Path) -> None:
    missing = tmp_path / "nginx.conf"
    result, path = run_nowhere(tmp_path, "--nginx-conf", str(missing))
    assert result.returncode == 2
    assert f"--nginx-conf {missing}: no such file or folder" in one_line(result)
    assert not path.exists()


def test_https_against_a_plain_http_server(healthy_sim: SimProcess, tmp_path: Path) -> None:
    https = healthy_sim.url.replace("http://", "https://")
    path = tmp_path / "walk.ndjson"
    result = cli("run", "--target", https, "--auto", "--transcript", str(path))
    assert result.returncode == 1
    line = one_line(result)
    assert f"does not speak TLS (https); if it serves plain HTTP, use {healthy_sim.url}" in line
    assert "WRONG_VERSION_NUMBER" not in line
    assert "--vllm-log" not in line  # the server's log cannot explain a wrong scheme
    assert not path.exists()


@pytest.fixture
def ssh_like_port() -> Iterator[int]:
    """A loopback port that speaks something else than HTTP: an SSH banner, then it hangs up."""
    server = socket.create_server(("127.0.0.1", 0))

    def serve() -> None:
        while True:
            try:
                conn, _ = server.accept()
            except OSError:
                return
            with conn:
                conn.sendall(b"SSH-2.0-OpenSSH_9.2p1 Debian-2+deb12u3\r\n")
                conn.recv(65536)
                conn.sendall(b"Invalid SSH identification string.\r\n\r\n")

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    yield server.getsockname()[1]
    server.close()
    thread.join(timeout=10)


def test_a_port_that_is_not_http(ssh_like_port: int, tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{ssh_like_port}"
    result = cli("run", "--target", url, "--auto", "--transcript", str(tmp_path / "walk.ndjson"))
    assert result.returncode == 1
    line = one_line(result)
    assert f"cannot reach {url}: it answered, but not in HTTP (it sent 'SSH-2.0-OpenSSH" in line
    assert "is this the server's port?" in line
    assert "--vllm-log" not in line
    stream = cli("probe", "stream", "--target", url, "--model", "m", "--repeat", "1", "--json")
    assert stream.returncode == NOTHING_MEASURED
    error = json.loads(stream.stdout)["samples"][0]["error"]
    assert "it answered, but not in HTTP" in error


def test_a_model_the_server_does_not_serve(healthy_sim: SimProcess) -> None:
    args = ("probe", "stream", "--target", healthy_sim.url, "--model", "wrong", "--repeat", "2")
    human = cli(*args)
    assert human.returncode == NOTHING_MEASURED
    out = " ".join(human.stdout.split())  # rich wraps long lines
    assert "http_404: HTTP 404: The model `wrong` does not exist." in out
    assert (
        "models this server serves: meta-llama/Llama-3.1-8B-Instruct (pass one with --model)" in out
    )
    report = json.loads(cli(*args, "--json").stdout)
    assert report["served_models"] == ["meta-llama/Llama-3.1-8B-Instruct"]


def test_a_file_that_is_no_vllm_log(tmp_path: Path) -> None:
    passwd = tmp_path / "passwd"
    passwd.write_text("root:x:0:0:root:/root:/bin/bash\n" * 30)
    human = cli("probe", "vllm-log", str(passwd))
    assert human.returncode == 1
    assert human.stdout == ""
    assert one_line(human) == (
        f"latency-wizard probe vllm-log: {passwd}: no vLLM log line in its 30 lines "
        "(is this the server's log? vLLM writes it to standard error)"
    )
    scripted = cli("probe", "vllm-log", str(passwd), "--json")
    assert scripted.returncode == 1
    assert json.loads(scripted.stdout)["engine"] is None  # the contract's object, all unknown


@pytest.mark.parametrize(
    ("command", "value", "message"),
    [
        (("run", "--auto"), "0", "'0': give a number of seconds above 0"),
        (("probe", "stream"), "-5", "'-5': give a number of seconds above 0"),
        (("probe", "endpoints"), "nan", "'nan': give a number of seconds above 0"),
        (("probe", "load"), "soon", "'soon' is not a number of seconds"),
    ],
)
def test_a_timeout_that_is_no_time_is_refused(
    tmp_path: Path, command: tuple[str, ...], value: str, message: str
) -> None:
    # `run --timeout 0` was taken, and a port where nothing listens then read 'no response headers
    # within 0 s', hiding the refused connection (found trying the README as a new user).
    target = f"http://127.0.0.1:{free_port()}"
    path = tmp_path / "walk.ndjson"
    result = cli(*command, "--target", target, "--timeout", value, "--transcript", str(path)) \
        if command[0] == "run" else cli(*command, "--target", target, "--timeout", value)  # fmt: skip
    assert result.returncode == 2
    assert result.stderr.strip().splitlines()[-1].endswith(f"argument --timeout: {message}")
    assert "Traceback" not in result.stderr and not path.exists()


@pytest.mark.parametrize(
    ("target", "base"),
    [
        ("http://127.0.0.1:9/v1", "http://127.0.0.1:9"),
        ("http://127.0.0.1:9/v1/", "http://127.0.0.1:9"),
        ("https://gw.example/llm/v1/completions", "https://gw.example/llm"),
        ("http://user:sk-canary-1@127.0.0.1:9/v1", "http://***@127.0.0.1:9"),
    ],
)
def test_a_target_with_the_apis_v1_gets_its_base_url(
    tmp_path: Path, target: str, base: str
) -> None:
    # A base URL pasted from a client's config (…/v1) passed the check, and every request then
    # went to /v1/v1/...: 404 in every round (found trying the README as a new user).
    path = tmp_path / "walk.ndjson"
    result = cli("run", "--auto", "--target", target, "--transcript", str(path))
    assert result.returncode == 2
    assert one_line(result).endswith(
        f"give the server's base URL without /v1 ({base}); the wizard adds the paths"
    )
    assert "canary" not in result.stderr and not path.exists()


@pytest.fixture
def file_server(tmp_path: Path) -> Iterator[str]:
    """A plain HTTP server that is no vLLM: Python's own file server, on loopback."""
    import sys
    import time

    port = free_port()
    served = tmp_path / "www"
    served.mkdir()
    # Its request log (each request's method and path) is kept: a test reads what was sent.
    with (tmp_path / "www.log").open("w") as log:
        process = subprocess.Popen(
            [sys.executable, "-m", "http.server", str(port), "--bind", "127.0.0.1", "-d", str(served)],
            stdout=subprocess.DEVNULL, stderr=log,
        )  # fmt: skip
    try:
        deadline = time.monotonic() + 30
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert time.monotonic() < deadline, "the file server did not start"
                time.sleep(0.1)
        yield f"http://127.0.0.1:{port}"
    finally:
        process.terminate()
        process.wait(timeout=10)


def test_a_target_that_answers_http_but_is_no_openai_api(file_server: str, tmp_path: Path) -> None:
    """The walk stops at its entry step: no round, LAT021 says what to give, exit 1 (it was 4, as
    for a walk that measured nothing); no completion request is sent and no Python None shown.
    The transcript is whole and says so (LAT021, then its end: nothing measured)."""
    path = tmp_path / "walk.ndjson"
    result = cli("run", "--target", file_server, "--auto", "--transcript", str(path))
    assert result.returncode == 1, result.stdout + result.stderr
    sent = (tmp_path / "www.log").read_text()
    assert "GET /v1/models" in sent and "POST" not in sent  # asked what it serves, sent no load
    assert "None" not in result.stdout
    assert "lists no models at /v1/models (HTTP 404): no completion request sent" in (
        " ".join(result.stdout.split())
    )
    assert f"{file_server} answered HTTP (/health 404, /v1/models 404) but lists no models" in (
        " ".join(result.stdout.split())
    )
    assert "the base URL of the vLLM server" in " ".join(result.stdout.split())
    events = [json.loads(line) for line in path.read_text().splitlines()]
    probes = [e["data"]["probe"] for e in events if e["type"] == "probe_result"]
    assert probes == ["endpoints", "host", "vllm-log", "fleet"]  # no round, no LoadGen
    assert [e["data"]["code"] for e in events if e["type"] == "finding"] == ["LAT021"]
    assert events[-1]["type"] == "end" and events[-1]["data"]["outcome"] == "nothing_measured"
    assert cli("replay", str(path)).returncode == 0
    zh = cli("run", "--target", file_server, "--auto", "--lang", "zh",
             "--transcript", str(tmp_path / "zh.ndjson"))  # fmt: skip
    assert zh.returncode == 1 and "None" not in zh.stdout
    said = "".join(zh.stdout.split())
    assert "目标地址不是OpenAIAPI" in said and "诊断已停止：这个目标上没有可测量的对象" in said


def test_the_log_hint_only_where_the_log_can_tell(tmp_path: Path) -> None:
    """Nothing listening: the server may have failed to start, its log says why. A name that does
    not resolve is the address's fault (resolved here by hand: tests never query DNS)."""
    import httpx

    from wizard.probes.http.reach import server_down

    result, _ = run_nowhere(tmp_path, "--auto")
    assert result.returncode == 1
    assert "(if the server failed to start, --vllm-log FILE tells why)" in one_line(result)
    unresolved = httpx.ConnectError("[Errno -2] Name or service not known")
    unresolved.__cause__ = socket.gaierror(-2, "Name or service not known")
    assert not server_down(unresolved)


@pytest.mark.parametrize(
    ("args", "code", "words"),
    [
        (("run", "--auto", "--target", "{closed}"), 1, "该端口没有服务在监听"),
        (("run", "--auto", "--target", "http://127.0.0.1:9/v1"), 2, "不带 /v1 的服务基础 URL"),
        (("run", "--auto", "--target", "ftp://x"), 2, "不是 http(s) URL"),
        (("run", "--auto", "--target", "{closed}", "--timeout", "0"), 2, "大于 0 的秒数"),
        (("replay", "{missing}"), 1, "文件或文件夹不存在"),
        (("replay", "{folder}"), 1, "这是一个文件夹"),
        (("probe", "nginx-config", "{missing}"), 1, "文件或文件夹不存在"),
    ],
)
def test_bad_input_is_said_in_chinese(
    tmp_path: Path, args: tuple[str, ...], code: int, words: str
) -> None:
    """Issue #13: with --lang zh (or a Chinese locale) the one error line is Chinese, whole."""
    from tests.text_checks import english_sentences

    values = {"closed": f"http://127.0.0.1:{free_port()}", "missing": str(tmp_path / "gone"),
              "folder": str(tmp_path)}  # fmt: skip
    argv = [arg.format(**values) for arg in args]
    lang = ["--lang", "zh"] if argv[0] in ("run", "replay") else []
    result = subprocess.run(wizard_command(*argv, *lang), capture_output=True, text=True, timeout=120,
                            stdin=subprocess.DEVNULL, env={**os.environ, "LANG": "zh_CN.UTF-8"})  # fmt: skip
    assert result.returncode == code, result.stderr
    line = (
        one_line(result) if argv[0] != "run" or "--timeout" not in argv else result.stderr.strip()
    )
    assert words in line and english_sentences(line) == [], line


@pytest.mark.parametrize(
    ("flag", "content", "zh"),
    [
        ("--answers", b"run_loadgen: \xb2\xe2\n", "不是 UTF-8 文本（第 13 个字节）"),
        ("--answers", b"run_loadgen: [\n", "回答文件不是有效的 YAML"),
        ("--answers", b"run_loadgn: true\n", "未知的问题 id 或发现代码 'run_loadgn'"),
        ("--answers", b"gpus: -3\n", "'gpus' 的回答必须大于或等于 0，给出的是负数"),
        ("--answers", b"gpus: [1]\n", "'gpus' 的回答必须是数字，给出的是一个 list"),
        ("--answers", None, "无法读取回答文件"),
        ("--request-body", b"{oops\n", "不是 JSON（第 2 列出错）"),
        ("--request-body", b'{"model": "m"}\n', "请求体要么有文本 `prompt`"),
        ("--request-body", None, "是文件夹：请给出一个包含单个 JSON 请求体的文件"),
    ],
)
def test_a_bad_answers_file_or_body_is_one_line_in_chinese(
    flag: str, content: bytes | None, zh: str, tmp_path: Path
) -> None:
    """Issue #13: these refusals were English after the Chinese 错误： (found by a new user)."""
    given = tmp_path / "given"
    if content is None:
        given.mkdir()
    else:
        given.write_bytes(content)
    result = subprocess.run(
        wizard_command("run", "--target", "http://127.0.0.1:9", flag, str(given), "--lang", "zh"),
        capture_output=True, text=True, timeout=60,
    )  # fmt: skip
    assert result.returncode == 2, result.stderr
    (line,) = result.stderr.strip().splitlines()
    assert line.startswith("latency-wizard run：错误：") and zh in line, line
    assert english_sentences(line) == [], line


def test_the_demo_refuses_a_bad_answers_file_before_it_starts_anything(tmp_path: Path) -> None:
    """It started the simulator and nginx first, printed four lines, then refused (a new user)."""
    answers = tmp_path / "answers.yaml"
    answers.write_text("run_loadgn: true\n")
    result = subprocess.run(wizard_command("demo", "--answers", str(answers)), capture_output=True,
                            text=True, timeout=60)  # fmt: skip
    assert result.returncode == 2 and result.stdout == "", result.stdout
    assert result.stderr.strip().splitlines() == [
        f"latency-wizard demo: error: {answers}: unknown question id or finding code 'run_loadgn'"
    ]
