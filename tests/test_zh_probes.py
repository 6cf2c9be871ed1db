"""Issue #13, Chinese throughout: the ``probe`` sub-commands an on-call engineer runs by hand say
what they found in Chinese with ``--lang zh`` (or a Chinese ``$LANG``): no English sentence and no
raw value (``None``, ``True``, a snake_case key) in their human output. They printed English
tables, verdicts and ``key: value`` lines before. ``--json`` and the English output are checked
unchanged by the tests of each probe."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import SimProcess, wizard_command
from tests.text_checks import english_sentences, raw_values
from wizard.cli.probe import NOTHING_MEASURED
from wizard.levers.nginx_runner import Nginx, find_nginx

FIXTURES = Path(__file__).parent / "fixtures" / "nginx"

requires_nginx = pytest.mark.skipif(
    find_nginx() is None and not os.environ.get("WIZARD_REQUIRE_NGINX"),
    reason="nginx is not installed (CI installs it and sets WIZARD_REQUIRE_NGINX=1)",
)


def said(*args: str, lang_env: str = "C.UTF-8", exit_code: int | None = 0) -> str:
    """The command's standard output (wide: no table cell cut short), checked for both defects."""
    result = subprocess.run(wizard_command("probe", *args), capture_output=True, text=True, timeout=120,
                            env={**os.environ, "LANG": lang_env, "LC_ALL": "", "COLUMNS": "240"})  # fmt: skip
    assert exit_code is None or result.returncode == exit_code, result.stdout + result.stderr
    text = result.stdout
    assert english_sentences(text) == [], (english_sentences(text), text)
    assert raw_values(text) == [], (raw_values(text), text)
    return text


def test_endpoints_in_chinese(healthy_sim: SimProcess) -> None:
    text = said("endpoints", "--target", healthy_sim.url, "--lang", "zh")
    assert "/v1/completions 可用：是" in text and "API 密钥：无" in text, text
    # A Chinese locale is enough.
    assert said("endpoints", "--target", healthy_sim.url, lang_env="zh_CN.UTF-8") == text


def test_stream_and_load_in_chinese(healthy_sim: SimProcess) -> None:
    text = said(
        "stream", "--target", healthy_sim.url, "--repeat", "2", "--max-tokens", "8", "--lang", "zh"
    )
    assert "2 个请求中 2 个成功" in text and "阶段" in text, text
    text = said("load", "--target", healthy_sim.url, "--concurrency", "2", "--requests", "4",
                "--max-tokens", "8", "--lang", "zh")  # fmt: skip
    assert "并发 2" in text and "稳态" in text and "客户端" in text, text


def test_a_refused_model_is_said_in_chinese(healthy_sim: SimProcess) -> None:
    text = said("stream", "--target", healthy_sim.url, "--model", "no-such-model", "--repeat", "1",
                "--lang", "zh", exit_code=NOTHING_MEASURED)  # fmt: skip
    assert "该服务提供的模型：" in text and "`http_404`" in text, text


def test_metrics_and_their_change_in_chinese(healthy_sim: SimProcess, tmp_path: Path) -> None:
    saved = tmp_path / "before.txt"
    said("metrics", "--target", healthy_sim.url, "--save", str(saved), "--lang", "zh")
    said(
        "stream", "--target", healthy_sim.url, "--repeat", "1", "--max-tokens", "4", "--lang", "zh"
    )
    text = said("metrics", "--target", healthy_sim.url, "--since", str(saved), "--lang", "zh")
    assert "KV 缓存占用：" in text and "此后：请求数：" in text and "服务端 TTFT：平均" in text, (
        text
    )


@requires_nginx
def test_proxy_in_chinese(healthy_sim: SimProcess, sim_factory: Any) -> None:
    with Nginx(healthy_sim.url) as nginx:
        text = said("proxy", "--target", healthy_sim.url, "--proxy", nginx.url, "--repeat", "2",
                    "--lang", "zh")  # fmt: skip
    assert "直连" in text and "经过代理" in text and "代理按到达顺序逐个转发事件" in text, text
    # An upstream that answers nginx's HTTP/1.0 close-delimited: nginx's defaults buffer it.
    h11 = sim_factory("--http", "h11")
    with Nginx(h11.url) as nginx:
        text = said("proxy", "--target", h11.url, "--proxy", nginx.url, "--repeat", "2",
                    "--lang", "zh", exit_code=1)  # fmt: skip
    assert "代理在缓冲：每次读取最多" in text and "TTFT 增加" in text, text


CONFIG = """\
http {
    gzip on;
    gzip_types text/event-stream;
    server {
        listen 8080;
        location /v1/ {
            proxy_pass http://127.0.0.1:8000;
            proxy_connect_timeout 120s;
        }
    }
}
"""


@pytest.mark.parametrize("config", ["buffering", "dump-nginx-1.22.1.txt", "include-broken"])
def test_nginx_config_in_chinese(config: str, tmp_path: Path) -> None:
    path = FIXTURES / config
    if (
        config == "buffering"
    ):  # every finding but the read timeout's, and the unknown version's note
        path = tmp_path / "nginx.conf"
        path.write_text(CONFIG)
    text = said("nginx-config", str(path), "--lang", "zh", exit_code=1)
    assert "代理的 location" in text and "LAT005 提示" in text, text
    if config == "include-broken":  # the parser's own message is quoted as it came
        assert "错误：`" in text and "引入）" in " ".join(text.split()), text
    if config == "buffering":
        for code in ("LAT001", "LAT002", "LAT004"):
            assert code in text, text
        assert "未设置 proxy_http_version" in text, text
        # LAT002's fix is words, not one directive: said in Chinese too (it was English).
        assert "gzip_types 中去掉 text/event-stream（或 proxy_buffering off;）" in text, text


def test_nginx_findings_say_in_chinese_what_they_say_in_english(tmp_path: Path) -> None:
    """Each finding's message is one sentence in every language, from the values it records: the
    Chinese quotes the worst silence and the X-Accel-Buffering way out as the English does (it
    left both out when the English was the reader's f-string and the Chinese a table's)."""
    path = tmp_path / "nginx.conf"
    path.write_text(CONFIG)
    english = subprocess.run(wizard_command("probe", "nginx-config", str(path), "--worst-gap-ms", "90000"),
                             capture_output=True, text=True, timeout=120,
                             env={**os.environ, "LANG": "C.UTF-8", "LC_ALL": "", "COLUMNS": "240"}).stdout  # fmt: skip
    chinese = said(
        "nginx-config", str(path), "--worst-gap-ms", "90000", "--lang", "zh", exit_code=1
    )
    # A long temporary path wraps the lines: compared as words.
    english, chinese = " ".join(english.split()), "".join(chinese.split())
    assert "the worst observed silence (90000 ms)" in english, english
    assert "最长静默（90000ms）" in chinese, chinese
    assert "'X-Accel-Buffering: no' would also turn it off" in english, english
    assert "'X-Accel-Buffering:no'也能将其关闭" in chinese, chinese


def test_validate_in_chinese(healthy_sim: SimProcess, tmp_path: Path) -> None:
    """A run LoadGen judges, and one where every query is refused (the wizard's own reason, from
    the run's counts, and LoadGen's quoted)."""
    common = ("validate", "--target", healthy_sim.url, "--min-duration", "1", "--max-tokens", "4",
              "--input-tokens", "8", "--outdir", str(tmp_path), "--lang", "zh")  # fmt: skip
    # VALID or INVALID as LoadGen's early stopping judges this machine's timing: either is said.
    text = said(*common, "--scenario", "SingleStream", exit_code=None)
    assert "LoadGen 日志在" in text and "查询数" in text, text
    text = said(*common, "--scenario", "Server", "--qps", "20", "--min-queries", "8", "--model", "no-such-model",
                exit_code=3)  # fmt: skip
    assert "没有一个成功" in text and "LoadGen 原文：" in text and "说明：没有查询成功" in text, (
        text
    )


@pytest.mark.parametrize(
    ("fixture", "shown", "code"),
    [
        ("topo-nvswitch-8.txt", "GPU：8 块，互联：NVLink", 0),
        ("topo_fp-p2p-read.txt", "点对点访问矩阵", 1),
    ],
)
def test_topology_in_chinese(fixture: str, shown: str, code: int) -> None:
    path = Path(__file__).parent / "fixtures" / "host" / fixture
    assert shown in said("topology", str(path), "--lang", "zh", exit_code=code)


def test_the_english_views_are_the_words_they_were(healthy_sim: Any) -> None:
    """English output is what it was: ``key: value`` lines for scripts, the tables' own words."""
    result = subprocess.run(wizard_command("probe", "endpoints", "--target", healthy_sim.url),
                            capture_output=True, text=True, timeout=60,
                            env={**os.environ, "LANG": "C.UTF-8", "LC_ALL": ""})  # fmt: skip
    assert "completions_ok: True\n" in result.stdout, result.stdout


HOST_FIXTURES = Path(__file__).parent / "fixtures" / "host"
METRICS_FIXTURES = Path(__file__).parent / "fixtures" / "metrics"
# A topology whose GPU1 row lost its X and a GPU2 row the header does not name.
TOPOLOGY_REPAIRED = "\tGPU0\tGPU1\nGPU0\t X \tNV4\nGPU1\tNV4\tNV4\nGPU2\t X \tNV4\n"
# Engine series with an inter-token histogram whose mean (1 ms) is below its first bucket (10 ms).
ITL_BELOW_BUCKET = """\
vllm:num_requests_running{engine="0",model_name="m"} 0.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="0.01",model_name="m"} 0.0
vllm:inter_token_latency_seconds_bucket{engine="0",le="+Inf",model_name="m"} 10.0
vllm:inter_token_latency_seconds_sum{engine="0",model_name="m"} 0.01
vllm:inter_token_latency_seconds_count{engine="0",model_name="m"} 10.0
"""


@pytest.mark.parametrize(
    ("args", "shown"),
    [
        (("nginx-config", FIXTURES / "missing-include.conf"),
         ["`include /etc/nginx/sites-enabled/*` 没有匹配到给出的任何文件"]),
        (("nginx-config", FIXTURES / "template-envsubst.conf.template"),
         ["`proxy_read_timeout ${READ_TIMEOUT}` 是模板占位符"]),
        (("topology", HOST_FIXTURES / "topo-pasted-twice-2.txt"), ["第 4 行：又一个 GPU0 行"]),
        (("topology", HOST_FIXTURES / "topo-shifted-cell-3.txt"), ["GPU0：缺少它自己的 X"]),
        (("topology", HOST_FIXTURES / "topo-extra-cell-3.txt"), ["GPU0：粘贴时它的行错位了 1 个单元格"]),
        (("topology", TOPOLOGY_REPAIRED), ["第 4 行：表头中没有 GPU2", "GPU1：它的行没有 X"]),
        (("metrics", "--file", METRICS_FIXTURES / "pasted-shell-prompt.txt"),
         ["跳过了 8 行不是 Prometheus 暴露格式的文本（第 1 行 `'ubuntu@gpu-node-3", "另有 5 行）"]),
        (("metrics", "--file", METRICS_FIXTURES / "histograms-only-untyped.txt"), ["无法判断它是哪一代"]),
        (("metrics", "--file", "http_requests_total 3\n"), ["没有 vllm:* 序列"]),
        (("metrics", "--file", ITL_BELOW_BUCKET), ["平均 ITL 1.0 ms 低于直方图最小桶（10.0 ms）"]),
    ],
)  # fmt: skip
def test_what_the_readers_note_is_said_in_chinese(
    args: tuple[Any, ...], shown: list[str], tmp_path: Path
) -> None:
    """Issue #13: the notes ``nginx-config``, ``topology`` and ``metrics`` write about what they
    could not read or repaired were English under ``--lang zh``. ``--json`` keeps ``notes`` (the
    English, as before) and has each beside it in every language (``notes_texts``)."""
    *command, given = args
    if isinstance(given, str):  # a paste: written to a file of its own
        (path := tmp_path / "pasted.txt").write_text(given)
        given = path
    text = said(*command, str(given), "--lang", "zh", exit_code=None)
    for words in shown:
        assert words in " ".join(text.split()), text
    result = subprocess.run(wizard_command("probe", *command, str(given), "--json"),
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    report = json.loads(result.stdout)
    assert report["notes"] == [said["en"] for said in report["notes_texts"]]
    assert all(
        " ".join(said["zh"].split()) in " ".join(text.split()) for said in report["notes_texts"]
    )
    # A note on the whole snapshot (statistics off, an ITL below its buckets) is a fact of its own.
    assert report["notes"] or report.get("note"), report


@pytest.mark.parametrize(
    ("text", "zh"),
    [("hello\n", "不是有效的 Prometheus 文本：其中没有样本（跳过了 1 行"),
     ("<html>\n", "这是 HTML，不是 Prometheus 指标")],
)  # fmt: skip
def test_text_that_is_no_metrics_is_refused_in_chinese(text: str, zh: str, tmp_path: Path) -> None:
    """The refusal of a file that holds no metrics was English under zh (its reader's words)."""
    paste = tmp_path / "metrics.txt"
    paste.write_text(text)
    result = subprocess.run(wizard_command("probe", "metrics", "--file", str(paste), "--lang", "zh"),
                            capture_output=True, text=True, timeout=60)  # fmt: skip
    assert result.returncode == 1, result
    (line,) = result.stderr.strip().splitlines()
    assert zh in line and english_sentences(line) == [], line


def test_playbook_check_says_ok_in_chinese() -> None:
    result = subprocess.run(wizard_command("playbook", "check"), capture_output=True, text=True,
                            timeout=60, env={**os.environ, "LC_ALL": "zh_CN.UTF-8"})  # fmt: skip
    assert result.returncode == 0, result.stderr
    assert result.stdout.startswith("通过：") and english_sentences(result.stdout) == [], (
        result.stdout
    )
