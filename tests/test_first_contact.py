"""Fast first contact (issue #27 item 5): every input is checked before any request; a
reachability failure is said from the check itself. A loopback listener the test starts counts
the connections the command made: a check that comes before the network leaves it at 0."""

from __future__ import annotations

import socket
import subprocess
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.conftest import wizard_command


@pytest.fixture
def listener() -> Iterator[tuple[str, socket.socket]]:
    """A port that accepts connections and never answers (each would be counted by accept)."""
    server = socket.create_server(("127.0.0.1", 0), backlog=16)
    server.setblocking(False)
    try:
        yield f"http://127.0.0.1:{server.getsockname()[1]}", server
    finally:
        server.close()


def connections(server: socket.socket) -> int:
    count = 0
    while True:
        try:
            server.accept()[0].close()
        except BlockingIOError:
            return count
        count += 1


def run(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(wizard_command("run", "--auto", "--timeout", "1", *args),
                          capture_output=True, text=True, timeout=120)  # fmt: skip


def test_a_broken_nginx_config_is_said_before_any_request(
    listener: tuple[str, socket.socket], tmp_path: Path
) -> None:
    """It was reported only after the target check (which here would wait on a silent port)."""
    url, server = listener
    conf = tmp_path / "nginx.conf"
    conf.write_text("http {\n  server {\n    location / { proxy_pass http://x;\n  }\n")
    path = tmp_path / "walk.ndjson"
    result = run("--target", url, "--nginx-conf", str(conf), "--transcript", str(path))
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f'latency-wizard run: error: --nginx-conf {conf}:4: unexpected end of file, expecting "}}"'
    ]
    assert connections(server) == 0 and not path.exists()


def test_a_transcript_under_a_file_is_said_before_any_request(
    listener: tuple[str, socket.socket], tmp_path: Path
) -> None:
    """A transcript path whose folder is a file: one clear line (it said "File exists", after
    the target was checked)."""
    url, server = listener
    blocker = tmp_path / "notes"
    blocker.write_text("a file, not a folder\n")
    path = blocker / "walks" / "walk.ndjson"
    result = run("--target", url, "--transcript", str(path))
    assert result.returncode == 2, result.stderr
    assert result.stderr.strip().splitlines() == [
        f"latency-wizard run: error: cannot write the transcript at {path}: {blocker} is a file, "
        "not a folder"
    ]
    assert connections(server) == 0 and blocker.read_text() == "a file, not a folder\n"
    zh = run("--lang", "zh", "--target", url, "--transcript", str(path))
    assert zh.returncode == 2 and f"{blocker} 是文件，不是文件夹" in zh.stderr


def test_the_playbook_is_read_once_not_value_by_value(monkeypatch: pytest.MonkeyPatch) -> None:
    """Most of `run`'s time before its reachability check was the playbook's YAML: a Python
    loader built for each of its 4,000 values. Counted, not timed: one loader composes the
    document (the bounded one: libyaml's parser cannot bound aliases) and one builds its values."""
    import yaml

    from wizard import playbook

    made: list[object] = []
    original = yaml.SafeLoader.__init__

    def counting(self: yaml.SafeLoader, stream: object) -> None:
        made.append(stream)
        original(self, stream)  # type: ignore[arg-type]

    monkeypatch.setattr(yaml.SafeLoader, "__init__", counting)
    book = playbook.load(playbook.DEFAULT_PLAYBOOK)
    assert book.nodes and len(made) <= 2
