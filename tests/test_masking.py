"""Masking keys without mangling words: the rule in wizard/auth.py, the CLI and a whole walk."""

from __future__ import annotations

import json
import os
import re
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import SimProcess, wizard_command
from wizard.auth import mask
from wizard.record import transcript

SimFactory = Callable[..., SimProcess]
PLAYBOOK_TEXT = "`Authorization: Bearer <key>` on /v1 paths"
STANDALONE_WRONG = re.compile(r"(?<![A-Za-z0-9_])wrong(?![A-Za-z0-9_])")


@pytest.mark.parametrize(
    "dump",
    [
        "Authorization: Bearer wrong",
        "{'Authorization': 'Bearer wrong'}",
        '{"headers": {"Authorization": "Bearer wrong"}}',
        "VLLM_API_KEY=wrong",
        "curl -H 'Authorization: Bearer wrong' http://x/v1/models?key=wrong&x=1",
        '"line one\\nwrong\\tthen"',  # after a JSON escape
        "key%3Dwrong",  # URL-encoded
        "wrong",
    ],
)
def test_a_short_key_is_masked_wherever_it_stands_as_a_key(dump: str) -> None:
    masked = mask(dump, "wrong")
    assert "wrong" not in masked and "***" in masked


@pytest.mark.parametrize(
    "text", ["wrong_base_path: False", '"wrong_base_path": false', "wrongly", "wrong2", "awrong"]
)
def test_a_short_key_inside_a_word_is_left_alone(text: str) -> None:
    assert mask(text, "wrong") == text


def test_a_long_key_is_masked_even_glued_to_other_text() -> None:
    key = "sk-canary-0123456789abcdef"
    assert mask(f"x{key}y token={key}", key) == "x***y token=***"


def test_a_key_of_punctuation_at_its_edge_is_masked_next_to_letters() -> None:
    assert mask("a-k3y! and -k3y!", "-k3y!") == "a*** and ***"


def test_endpoints_with_a_short_wrong_key_keeps_the_fact_names(sim_factory: SimFactory) -> None:
    sim = sim_factory("--scenario", "auth-required", env={"VLLM_API_KEY": "canary-2b7e"})
    env = {**os.environ, "VLLM_API_KEY": "wrong"}
    human = subprocess.run(
        wizard_command("probe", "endpoints", "--target", sim.url),
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    assert "wrong_base_path: False" in human.stdout and "***" not in human.stdout
    assert "auth: rejected" in human.stdout
    as_json = subprocess.run(
        wizard_command("probe", "endpoints", "--target", sim.url, "--json"),
        capture_output=True, text=True, timeout=60, env=env,
    )  # fmt: skip
    facts = json.loads(as_json.stdout)
    assert facts["wrong_base_path"] is False and facts["auth"] == "rejected"


def test_a_walk_shows_the_playbook_text_and_masks_the_key(
    sim_factory: SimFactory, tmp_path: Path
) -> None:
    key = "wrong"  # short, and a word the output contains (wrong_base_path): masked as a token only
    sim = sim_factory("--scenario", "auth-required", env={"VLLM_API_KEY": key})
    answers = tmp_path / "answers.json"
    answers.write_text(json.dumps({"run_loadgen": False}))
    path = tmp_path / "walk.ndjson"
    result = subprocess.run(
        wizard_command("run", "--target", sim.url, "--answers", str(answers), "--transcript", str(path)),
        capture_output=True, text=True, timeout=300, env={**os.environ, "VLLM_API_KEY": key},
    )  # fmt: skip
    assert result.returncode == 0, result.stderr
    raw = path.read_text()
    assert not STANDALONE_WRONG.search(raw + result.stdout + result.stderr)
    assert "wrong_base_path" in raw
    loaded = transcript.load(path)
    entry = next(e for e in loaded.events if e["type"] == "node_enter" and e["node"] == "entry.api")
    assert PLAYBOOK_TEXT in entry["data"]["explain"]["en"]  # the closing backtick survives
    assert PLAYBOOK_TEXT in " ".join(result.stdout.split())
    endpoints = next(
        e
        for e in loaded.events
        if e["type"] == "probe_result" and e["data"]["probe"] == "endpoints"
    )
    assert endpoints["data"]["facts"]["wrong_base_path"] is False  # fmt: skip


@pytest.mark.parametrize("way", ["VLLM_API_KEY", "OPENAI_API_KEY", "--api-key-env"])
def test_a_key_given_any_way_is_used_and_shown_nowhere(sim_factory: SimFactory, way: str) -> None:
    key = "canary-every-way-3c9e"
    sim = sim_factory("--scenario", "auth-required", env={"VLLM_API_KEY": key})
    env = {k: v for k, v in os.environ.items() if k not in ("VLLM_API_KEY", "OPENAI_API_KEY")}
    flag: list[str] = []
    if way == "--api-key-env":
        env["ONCALL_KEY"], flag = key, ["--api-key-env", "ONCALL_KEY"]
    else:
        env[way] = key
    printed = ""
    for args in (["stream", "--repeat", "1"], ["endpoints"]):
        for mode in ((), ("--json",)):
            result = subprocess.run(
                wizard_command("probe", *args, "--target", sim.url, *flag, *mode),
                capture_output=True, text=True, timeout=60, env=env,
            )  # fmt: skip
            assert result.returncode == 0, result.stderr  # the key was sent: the server answered
            printed += result.stdout + result.stderr
    assert key not in printed
