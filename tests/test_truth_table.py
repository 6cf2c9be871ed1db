"""The truth table: named faults alone and two at once (a proxy fault on top), each reaching its
cause and proven fixed by its own evidence.

The demo owns its processes (the simulator, and nginx in front of it with a close-delimited
upstream, where nginx's default buffering really batches the stream), so it applies every change
the walk proposes; each row then shows, per applied change, the cause's own evidence gone.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Any

import pytest

from tests.conftest import assert_walk_exit, wizard_command
from wizard import transcript
from wizard.nginx_runner import find_nginx

ROWS = [
    # scenario, with nginx, causes expected (and proven gone)
    ("kv-pressure", False, {"kv_cache_preemption"}),
    ("queue-saturation", False, {"queue_saturation"}),
    ("kv-pressure", True, {"kv_cache_preemption", "proxy_buffering"}),
    ("queue-saturation", True, {"queue_saturation", "proxy_buffering"}),
]


@pytest.mark.slow
@pytest.mark.parametrize(("scenario", "nginx", "expected"), ROWS)
def test_each_cause_is_found_and_its_fix_proven(
    tmp_path: Path, scenario: str, nginx: bool, expected: set[str]
) -> None:
    if nginx and find_nginx() is None:
        pytest.skip("nginx is not installed (CI installs it and sets WIZARD_REQUIRE_NGINX=1)")
    path = tmp_path / "walk.ndjson"
    result = subprocess.run(
        wizard_command("demo", "--auto", "--scenario", scenario, "--transcript", str(path),
                       *([] if nginx else ["--no-nginx"])),
        capture_output=True, text=True, timeout=900, stdin=subprocess.DEVNULL,
    )  # fmt: skip
    end = assert_walk_exit(result, path)
    events = transcript.load(path).events
    found = [e["data"] for e in events if e["type"] == "finding"]
    causes = {f["cause"] for f in found if f["severity"] != "info"}
    assert causes == expected, [(f["code"], f["evidence"]) for f in found]
    changed = {e["data"]["code"] for e in events if e["type"] == "change"}
    verdicts: dict[str, Any] = {
        e["data"]["code"]: e["data"] for e in events if e["type"] == "verdict"
    }
    assert changed and changed <= set(verdicts), (changed, verdicts)
    for code in changed:
        assert verdicts[code]["verdict"] == "cause gone", verdicts[code]
    assert end["outcome"] == "no_cause" and end["causes_remaining"] == []
