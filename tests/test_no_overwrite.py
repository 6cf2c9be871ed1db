"""Nothing is overwritten by surprise (issue #27, item 3): ``export -o`` refuses its own input by
any name, a symbolic link, and an existing file unless --force; a walk's transcript path that
exists is refused, never replaced. Each refusal is one line, the file's bytes untouched."""

from __future__ import annotations

import os
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest

from tests.conftest import wizard_command
from tests.recorder import Recorder

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "transcripts" / "examples" / "1-kv-pressure-direct.ndjson"


def cli(*args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(wizard_command(*args), capture_output=True, text=True, timeout=120,
                          stdin=subprocess.DEVNULL)  # fmt: skip


def _same_path(t: Path) -> Path:
    return t


def _other_spelling(t: Path) -> Path:
    (t.parent / "sub").mkdir()
    return t.parent / "sub" / ".." / t.name


def _hard_link(t: Path) -> Path:
    link = t.parent / "hard.md"
    os.link(t, link)
    return link


@pytest.mark.parametrize("name", [_same_path, _other_spelling, _hard_link])
@pytest.mark.parametrize("force", [(), ("--force",)])
def test_export_refuses_to_write_over_its_own_transcript(
    tmp_path: Path, name: Callable[[Path], Path], force: tuple[str, ...]
) -> None:
    path = tmp_path / "t.ndjson"
    shutil.copy(EXAMPLE, path)
    before = path.read_bytes()
    output = name(path)
    result = cli("export", str(path), "-o", str(output), *force)
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"latency-wizard export: error: -o {output} is the transcript being exported: it is not "
        "overwritten; choose another file"
    ]
    assert path.read_bytes() == before


@pytest.mark.parametrize("force", [(), ("--force",)])
@pytest.mark.parametrize("to", ["transcript", "other", "nowhere"])
def test_export_never_follows_a_symbolic_link(
    tmp_path: Path, force: tuple[str, ...], to: str
) -> None:
    path = tmp_path / "t.ndjson"
    shutil.copy(EXAMPLE, path)
    other = tmp_path / "precious.txt"
    other.write_text("keep me\n")
    link = tmp_path / "summary.md"
    link.symlink_to({"transcript": path, "other": other, "nowhere": tmp_path / "absent"}[to])
    before = {p: p.read_bytes() for p in (path, other)}
    result = cli("export", str(path), "-o", str(link), *force, "--lang", "zh")
    assert result.returncode == 2
    assert result.stderr.splitlines() == [
        f"latency-wizard export：错误：-o {link} 是符号链接：不会跟随它；请直接给出文件本身"
    ]
    assert {p: p.read_bytes() for p in (path, other)} == before
    assert not (tmp_path / "absent").exists()


def test_export_replaces_an_existing_file_only_with_force(tmp_path: Path) -> None:
    other = tmp_path / "summary.md"
    other.write_text("last week's summary\n")
    refused = cli("export", str(EXAMPLE), "-o", str(other))
    assert refused.returncode == 2
    assert refused.stderr.splitlines() == [
        f"latency-wizard export: error: -o {other} already exists: pass --force to replace it"
    ]
    assert other.read_text() == "last week's summary\n"
    forced = cli("export", str(EXAMPLE), "-o", str(other), "--force")
    assert forced.returncode == 0, forced.stderr
    assert other.read_text() == cli("export", str(EXAMPLE)).stdout
    new = tmp_path / "new.md"
    written = cli("export", str(EXAMPLE), "-o", str(new))  # a new file needs nothing
    assert written.returncode == 0 and new.read_text() == other.read_text()


def test_a_walk_refuses_a_transcript_path_that_exists(recorder: Recorder, tmp_path: Path) -> None:
    """The transcript is created with O_EXCL: an existing file (a previous session's transcript)
    is refused in one line, never replaced, before anything is measured. (``demo``'s refusal:
    tests/test_demo_and_nginx.py.)"""
    existing = tmp_path / "t.ndjson"
    shutil.copy(EXAMPLE, existing)
    before = existing.read_bytes()
    for lang, line in (("en", f"{existing} already exists; choose another --transcript"),
                       ("zh", f"{existing} 已存在；请换一个 --transcript")):  # fmt: skip
        result = cli("run", "--target", recorder.url, "--auto", "--transcript", str(existing),
                     "--lang", lang)  # fmt: skip
        assert result.returncode == 1, result.stderr
        assert len(result.stderr.splitlines()) == 1 and result.stderr.rstrip().endswith(line)
        assert existing.read_bytes() == before
    assert [h for h in recorder.seen if "Authorization" in h] == []  # the reachability check only
