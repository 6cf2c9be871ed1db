"""Per-replica measurement through a real nginx ``upstream`` over real simulators.

Three simulators: one ``queue-saturation`` replica (--max-num-seqs 4) and two healthy ones, behind
a real nginx whose ``upstream`` block lists them. The rounds are short (12 requests of 16 tokens at
8 streams: twice the faulty replica's --max-num-seqs, so its queue shows).
"""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import (
    SimProcess,
    assert_walk_exit,
    playbook_with_probes_only,
    start_sim,
    wizard_command,
)
from tests.text_checks import english_sentences, raw_values
from wizard.levers.nginx_runner import Nginx, find_nginx

requires_nginx = pytest.mark.skipif(
    find_nginx() is None and not os.environ.get("WIZARD_REQUIRE_NGINX"),
    reason="nginx is not installed (CI installs it and sets WIZARD_REQUIRE_NGINX=1)",
)
SHORT_ROUND = ("--requests", "12", "--max-tokens", "16", "--concurrency", "8")
# The balancer's share needs requests, not tokens: 8 steady plus each stream's first.
SHARE_ROUND = ("--requests", "8", "--max-tokens", "4", "--concurrency", "8")


@dataclass
class Replicas:
    faulty: SimProcess
    healthy: list[SimProcess]

    @property
    def all(self) -> list[SimProcess]:
        return [self.faulty, *self.healthy]

    @staticmethod
    def address(sim: SimProcess) -> str:
        return sim.url.split("://", 1)[1]


@pytest.fixture(scope="module")
def replicas(tmp_path_factory: pytest.TempPathFactory) -> Iterator[Replicas]:
    workdir = tmp_path_factory.mktemp("replicas")
    sims: list[SimProcess] = []
    try:
        sims.append(start_sim(workdir, "--scenario", "queue-saturation"))
        sims.extend(start_sim(workdir) for _ in range(2))
        yield Replicas(sims[0], sims[1:])
    finally:
        for sim in sims:
            sim.stop()


def upstream(
    replicas: Replicas, balancing: str = "", weights: dict[int, int] | None = None
) -> Nginx:
    """nginx over every replica, streaming unbuffered; ``weights`` by replica index."""
    servers = tuple(
        Replicas.address(sim) + (f" weight={(weights or {})[i]}" if i in (weights or {}) else "")
        for i, sim in enumerate(replicas.all)
    )
    return Nginx("http://fleet", {"proxy_buffering": "off"}, servers=servers, balancing=balancing)


def probe_replicas(*args: str, spec: tuple[str, ...] = SHORT_ROUND) -> tuple[int, dict[str, Any]]:
    result = subprocess.run(
        wizard_command("probe", "replicas", "--json", *spec, *args),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert result.returncode in (0, 1), result.stderr
    return result.returncode, json.loads(result.stdout)


@requires_nginx
def test_the_faulty_replica_behind_an_nginx_upstream_is_named_with_its_cause(
    replicas: Replicas,
) -> None:
    with upstream(replicas) as nginx:
        code, report = probe_replicas("--proxy", nginx.url, "--nginx-conf", str(nginx.config_path))
    assert code == 1
    assert report["source"].startswith("nginx upstream fleet (")
    assert report["upstream"]["method"] == "round_robin"
    assert [r["url"] for r in report["replicas"]] == [s.url for s in replicas.all]
    assert report["slow"] == [replicas.faulty.url]
    assert report["look_at"]["url"] == replicas.faulty.url
    assert report["look_at"]["cause"] == "queue_saturation"
    # Round-robin spreads the balancer's requests: no balancer cause.
    assert report["causes"] == ["queue_saturation"]
    assert replicas.faulty.url in report["evidence"]["queue_saturation"]
    by_url = {r["url"]: r for r in report["replicas"]}
    assert by_url[replicas.faulty.url]["server"]["waiting_max"] >= 1
    assert {s["segment"] for s in by_url[replicas.faulty.url]["slower"]} >= {"ttft_ms"}
    via = report["balancer_round"]
    assert via["error"] is None and via["sticky"] is None and via["unbalanced"] is None
    # Every replica served some of the balancer's requests, and they add up to its round.
    assert all(n > 0 for n in via["served"].values())
    assert via["total"] == sum(via["served"].values())
    assert {c["segment"] for c in via["against_direct"]} == {"ttft_ms", "tpot_ms"}


@requires_nginx
def test_sticky_sessions_are_named(replicas: Replicas) -> None:
    with upstream(replicas, balancing="ip_hash") as nginx:
        _, report = probe_replicas(
            "--proxy", nginx.url, "--nginx-conf", str(nginx.config_path), spec=SHARE_ROUND
        )
    assert report["upstream"]["method"] == "ip_hash" and report["upstream"]["sticky"] is True
    via = report["balancer_round"]
    # One client, one address: ip_hash sends it all to one replica.
    assert sorted(via["served"].values())[:-1] == [0, 0]
    assert via["sticky"]["replica"] in {s.url for s in replicas.all}
    assert {c for c in report["causes"] if c.startswith("balancer_")} == {"balancer_sticky"}
    assert "ip_hash" in report["evidence"]["balancer_sticky"]
    # One sentence in every language: the Chinese names the upstream's method too (it left it out
    # when the English was an f-string of the judgement's and the Chinese a table's).
    said = report["evidence_texts"]["balancer_sticky"]
    assert said["en"] == report["evidence"]["balancer_sticky"]
    assert "ip_hash" in said["zh"] and english_sentences(said["zh"]) == [], said
    assert via["sticky"]["text"] == said["en"] and via["sticky"]["method"] == "ip_hash"


@requires_nginx
def test_an_unequal_share_is_named_with_its_weight(replicas: Replicas) -> None:
    heavy = replicas.healthy[0]
    with upstream(replicas, weights={1: 20}) as nginx:
        _, report = probe_replicas(
            "--proxy", nginx.url, "--nginx-conf", str(nginx.config_path), spec=SHARE_ROUND
        )
    via = report["balancer_round"]
    assert via["sticky"] is None
    assert via["unbalanced"]["replica"] == heavy.url
    assert "weight in the upstream: 20" in report["evidence"]["balancer_unbalanced"]
    assert via["unbalanced"]["text"] == report["evidence"]["balancer_unbalanced"]
    # Said in Chinese with the same facts as in English: the served count of how many, the share,
    # the equal share, the band chance gives it and the weight (the band was left out).
    said = report["evidence_texts"]["balancer_unbalanced"]
    assert said["en"] == report["evidence"]["balancer_unbalanced"]
    assert "±" in said["zh"] and "权重：20" in said["zh"], said
    assert english_sentences(said["zh"]) == [] and raw_values(said["zh"]) == [], said
    assert sorted(re.findall(r"\d+", said["zh"])) == sorted(re.findall(r"\d+", said["en"])), said
    # What this test is about: the balancer's verdict (the faulty replica is the first test's).
    assert {c for c in report["causes"] if c.startswith("balancer_")} == {"balancer_unbalanced"}


def test_healthy_replicas_give_no_cause(replicas: Replicas) -> None:
    code, report = probe_replicas(*(a for s in replicas.healthy for a in ("--replica", s.url)))
    assert report["source"] == "--replica"
    assert report["balancer_round"] is None
    assert code == 0, [(r["url"], r["cause"], r["slower"]) for r in report["replicas"]]
    assert report["causes"] == [] and report["slow"] == [] and report["look_at"] is None


@requires_nginx
def test_the_walk_names_the_faulty_replica_behind_the_proxy(
    replicas: Replicas, tmp_path: Path
) -> None:
    from wizard.record import transcript

    path = tmp_path / "walk.ndjson"
    # The walk's own round, shorter: 8 streams (a queue on the faulty replica) of 16 tokens.
    book = playbook_with_probes_only(
        tmp_path, ("replicas",), params={"requests": 8, "max_tokens": 16}
    )
    with upstream(replicas) as nginx:
        result = subprocess.run(
            wizard_command("run", "--auto", "--playbook", str(book), "--target",
                           replicas.healthy[0].url, "--proxy", nginx.url, "--nginx-conf",
                           str(nginx.config_path), "--transcript", str(path)),
            capture_output=True, text=True, timeout=300,
        )  # fmt: skip
    end = assert_walk_exit(result, path)
    events = transcript.load(path).events
    findings = {e["data"]["code"]: e["data"] for e in events if e["type"] == "finding"}
    assert set(findings) == {"LAT074"}, findings
    assert replicas.faulty.url in findings["LAT074"]["evidence"]
    assert f"{replicas.faulty.url}: TTFT p50" in result.stdout  # the live walk shows each replica
    assert end["outcome"] == "cause_remains" and end["causes_remaining"] == ["queue_saturation"]
    # Replayed in Chinese, the replicas' source, the slow one's cause and its evidence are said in
    # Chinese too (they were the recorded English: "up to 7 requests waiting; ..."), and so is the
    # finding's evidence, which quotes the probe's (it was the English, in a Chinese box).
    replayed = subprocess.run(wizard_command("replay", str(path), "--lang", "zh"), capture_output=True,
                              text=True, timeout=60, env={**os.environ, "COLUMNS": "240"}).stdout  # fmt: skip
    start = replayed.index("副本（来自")
    lines = replayed[start : replayed.index("╰", replayed.index("╭─ LAT074"))]
    assert f"queue_saturation: {replicas.faulty.url}：TTFT p50" in lines, lines
    assert english_sentences(lines) == [] and raw_values(lines) == [], lines
    said = findings["LAT074"]["evidence_texts"]
    assert said["en"] == findings["LAT074"]["evidence"] and said["zh"].startswith(
        f"{replicas.faulty.url}：TTFT p50"
    ), said
    box = lines[lines.index("╭─ LAT074") :]
    assert said["zh"] in " ".join(part.strip(" │") for part in box.splitlines()), box
    # The summary in every format quotes the finding's evidence in Chinese too.
    for fmt in ("md", "html", "text"):
        exported = subprocess.run(wizard_command("export", str(path), "--format", fmt, "--lang", "zh"),
                                  capture_output=True, text=True, timeout=60).stdout  # fmt: skip
        assert said["zh"] in exported and findings["LAT074"]["evidence"] not in exported, (
            fmt,
            exported,
        )


def test_bad_replica_input_is_one_line(tmp_path: Path) -> None:
    conf = tmp_path / "nginx.conf"
    conf.write_text(
        "events {}\nhttp { server { location / { proxy_pass http://127.0.0.1:9; } } }\n"
    )
    for args, needle in (
        (["--replica", "ftp://x", "--replica", "http://127.0.0.1:9"], "is not an http(s) URL"),
        (["--replica", "http://127.0.0.1:9"], "fewer than two replica URLs"),
        (["--nginx-conf", str(conf)], "fewer than two replica URLs"),
        (["--via", "x", "--replica", "http://a", "--replica", "http://b"], "--proxy 'x'"),
    ):
        result = subprocess.run(
            wizard_command("probe", "replicas", *args), capture_output=True, text=True, timeout=60
        )
        assert result.returncode == 2, result.stderr
        assert needle in result.stderr and len(result.stderr.strip().splitlines()) == 1


@requires_nginx
def test_the_replicas_are_said_in_chinese(replicas: Replicas) -> None:
    """Issue #13: ``probe replicas --lang zh`` names the slow replica, its numbers and its cause in
    Chinese (its evidence said again from the report): no English sentence, no raw value."""
    with upstream(replicas) as nginx:
        result = subprocess.run(
            wizard_command("probe", "replicas", *SHORT_ROUND, "--proxy", nginx.url,
                           "--nginx-conf", str(nginx.config_path), "--lang", "zh"),
            capture_output=True, text=True, timeout=300, env={**os.environ, "COLUMNS": "240"},
        )  # fmt: skip
    text = result.stdout
    assert result.returncode == 1, result.stderr
    assert f"queue_saturation：{replicas.faulty.url}：TTFT p50" in text, text
    assert (
        "副本（来自 nginx 的 upstream fleet" in " ".join(text.split()) and "经过均衡器" in text
    ), text
    assert english_sentences(text) == [] and raw_values(text) == [], text
