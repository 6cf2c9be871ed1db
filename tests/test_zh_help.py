"""Issue #13, Chinese throughout: ``--help`` of every command and argparse's own errors follow the
user's language (``--lang zh``, else a Chinese locale). They were English under zh before: the
help texts, ``usage:``, the section titles and lines such as "the following arguments are
required". English stays as it was, word for word."""

from __future__ import annotations

import argparse
import os
import re
import subprocess
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from tests.conftest import wizard_command
from tests.text_checks import english_sentences
from wizard.cli.main import build_parser

CHINESE = re.compile(r"[\u4e00-\u9fff]")
CHOICES = re.compile(r"\{[\w,.-]+\}")  # an option's choices as argparse writes them: {md,html}


def commands() -> list[tuple[str, ...]]:
    """Every command line that has a --help: latency-wizard, each command, each sub-command."""

    def walk(parser: argparse.ArgumentParser, path: tuple[str, ...]) -> list[tuple[str, ...]]:
        found = [path]
        for action in parser._actions:
            if isinstance(action, argparse._SubParsersAction):
                for name, child in action.choices.items():
                    found += walk(child, (*path, name))
        return found

    return walk(build_parser(), ())


def cli(*args: str, lang_env: str = "zh_CN.UTF-8") -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "LANG": lang_env, "LC_ALL": "", "LC_MESSAGES": "", "COLUMNS": "100"}
    return subprocess.run(wizard_command(*args), capture_output=True, text=True, timeout=60,
                          env=env, stdin=subprocess.DEVNULL)  # fmt: skip


def all_at_once(
    argvs: list[list[str]], lang_env: str | list[str]
) -> list[subprocess.CompletedProcess[str]]:
    """The commands run side by side (each is a fresh interpreter: seconds in a row), each in
    ``lang_env`` or in its own."""
    envs = [lang_env] * len(argvs) if isinstance(lang_env, str) else lang_env
    with ThreadPoolExecutor(max_workers=4) as pool:
        return list(pool.map(lambda a, e: cli(*a, lang_env=e), argvs, envs))


def has_lang(command: tuple[str, ...]) -> bool:
    parser = build_parser()
    for name in command:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[name]
    return any("--lang" in action.option_strings for action in parser._actions)


def assert_chinese_help(command: tuple[str, ...], result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, result.stderr
    text = result.stdout
    assert text.startswith("用法：latency-wizard") and "显示此帮助信息并退出" in text, text
    assert english_sentences(CHOICES.sub(" ", text)) == [], (command, english_sentences(text), text)


def test_every_help_in_a_chinese_locale() -> None:
    every = commands()
    assert len(every) > 20  # every probe, playbook's actions, ...
    for command, result in zip(every, all_at_once([[*c, "--help"] for c in every], "zh_CN.UTF-8"),
                               strict=True):  # fmt: skip
        assert_chinese_help(command, result)


def test_every_help_with_lang_zh() -> None:
    """--lang zh is read before the arguments are parsed, wherever it stands."""
    every = [c for c in commands() if has_lang(c)]
    assert ("run",) in every and ("probe", "stream") in every and ("export",) in every
    argvs = [[*c, "--lang", "zh", "--help"] if i % 2 else [*c, "--lang=zh", "--help"]
             for i, c in enumerate(every)]  # fmt: skip
    for command, result in zip(every, all_at_once(argvs, "C.UTF-8"), strict=True):
        assert_chinese_help(command, result)


# Recorded from `--help` before the Chinese existed (COLUMNS=100): English must read the same.
ENGLISH = {
    (): ["usage: latency-wizard [-h] [--version] COMMAND ...\n\nGuided troubleshooting for LLM "
         "inference latency on vLLM (optionally behind nginx): an ordered\ndiagnosis with evidence at",
         "positional arguments:\n  COMMAND\n    demo      walk the diagnosis against the built-in "
         "simulator\n", "  -h, --help  show this help message and exit\n  --version   show "
         "program's version number and exit\n"],
    ("run",): ["usage: latency-wizard run [-h] [--target TARGET]",
               "Exit status (also the `end` event's \"outcome\" in the transcript, and `export "
               "--format json`):\n  0  the walk completed and no cause remains",
               "the incident's workload:\n  the request shape the service really gets; every round "
               "uses it",
               "  --lang {en,zh}        language of the walk (default: from $LANG)\n"],
    ("probe", "stream"): ["definitions:\n  TTFT  send -> first SSE event carrying output",
                          "  --lang {en,zh}        zh: the report in Chinese (default: from $LANG)\n"],
    ("sim",): ["engine flags (as on 'vllm serve'):\n  --max-num-batched-tokens MAX_NUM_BATCHED_TOKENS\n"
               "                        token budget per engine step\n",
               "examples:\n  latency-wizard sim                                  # healthy"],
    ("export",): ["options:\n  -h, --help            show this help message and exit\n"
                  "  --salvage             keep the verified part of a damaged transcript (a last "
                  "line cut mid-write,\n                        a torn tail after a full disk)"],
}  # fmt: skip


@pytest.mark.parametrize("command", list(ENGLISH), ids=lambda c: " ".join(c) or "latency-wizard")
def test_english_help_is_unchanged(command: tuple[str, ...]) -> None:
    result = cli(*command, "--help", lang_env="C.UTF-8")
    assert result.returncode == 0 and not CHINESE.search(result.stdout), result.stdout
    for phrase in ENGLISH[command]:
        assert phrase in result.stdout, (phrase, result.stdout)


ERRORS = [
    # (arguments, argparse's English error line, words of its Chinese line)
    (("run", "--auto", "--concurrency", "x"),
     "latency-wizard run: error: argument --concurrency: invalid int value: 'x'",
     "latency-wizard run：错误：参数 --concurrency：无效的 int 值：'x'"),
    (("export", "t.ndjson", "--format", "pdf"),
     "latency-wizard export: error: argument --format: invalid choice: 'pdf' (choose from 'md', "
     "'html', 'json', 'text')", "无效的选择：'pdf'（可选：'md', 'html', 'json', 'text'）"),
    (("replay",), "latency-wizard replay: error: the following arguments are required: transcript",
     "latency-wizard replay：错误：缺少必需的参数：transcript"),
    (("probe", "stream"), "latency-wizard probe stream: error: one of the arguments --target is "
     "required", "必须给出以下参数之一：--target"),
    (("probe", "load", "--target"), "latency-wizard probe load: error: argument --target: expected "
     "one argument", "参数 --target：需要一个值"),
    (("run", "--auto", "--answers", "a.yaml"), "latency-wizard run: error: argument --answers: not "
     "allowed with argument --auto", "不能与参数 --auto 同时使用"),
    (("sim", "--no-such-flag"), "latency-wizard: error: unrecognized arguments: --no-such-flag",
     "latency-wizard：错误：无法识别的参数：--no-such-flag"),
    (("nosuch",), "latency-wizard: error: argument COMMAND: invalid choice: 'nosuch' (choose from "
     "'demo', 'triage', 'run', 'resume', 'replay', 'export', 'playbook', 'probe', 'sim')",
     "参数 COMMAND：无效的选择：'nosuch'"),
]  # fmt: skip


def error_line(result: subprocess.CompletedProcess[str]) -> str:
    """The one error line after the usage (exit 2, no traceback)."""
    assert result.returncode == 2 and "Traceback" not in result.stderr, result.stderr
    *usage, line = result.stderr.strip().splitlines()
    assert usage and all(u.startswith(("usage: ", "用法：", " ")) for u in usage), result.stderr
    return line


@pytest.mark.parametrize(
    ("args", "english", "chinese"), ERRORS, ids=[" ".join(e[0]) for e in ERRORS]
)
def test_argparse_errors_follow_the_language(
    args: tuple[str, ...], english: str, chinese: str
) -> None:
    zh_locale, lang_zh, en = all_at_once([list(args), [*args, "--lang", "zh"], list(args)],
                                         ["zh_CN.UTF-8", "C.UTF-8", "C.UTF-8"])  # fmt: skip
    for result in (zh_locale, lang_zh):
        line = error_line(result)
        assert chinese in line and "错误" in line and english_sentences(line) == [], line
        assert "usage:" not in result.stderr, result.stderr
    assert error_line(en) == english


def test_the_commands_own_bad_input_in_chinese(tmp_path: Path) -> None:
    """The one-line errors a command says itself after parsing (exit 2) are Chinese too."""
    closed = "http://127.0.0.1:9"
    a_file = tmp_path / "lscpu.txt"
    a_file.write_text("Architecture: x86_64\n")
    cases = [
        (["probe", "load", "--target", closed, "--warmup", "-1"], "--warmup 必须大于或等于 0"),
        (["probe", "validate", "--target", closed, "--scenario", "Offline", "--find-peak"],
         "--find-peak 只适用于 Server 场景"),
        (["run", "--auto", "--target", closed, "--host-evidence", str(a_file), "--transcript",
          str(tmp_path / "walk.ndjson")], f"--host-evidence {a_file} 是一个文件"),
        (["probe", "replicas", "--replica", closed], "副本 URL 不足两个"),
        (["demo", "--no-nginx", "--engine-flag", "max_num_seqs"], "应为 NAME=VALUE"),
        (["sim", "--scenario", "no-such"], "未知的场景 'no-such'"),
    ]  # fmt: skip
    for (_, words), result in zip(cases, all_at_once([c for c, _ in cases], "zh_CN.UTF-8"),
                                     strict=True):  # fmt: skip
        assert result.returncode == 2, result.stderr
        lines = result.stderr.strip().splitlines()
        assert len(lines) == 1 and words in lines[0] and "：错误：" in lines[0], lines
        assert english_sentences(lines[0]) == [], lines
    assert not (tmp_path / "walk.ndjson").exists()


def test_what_export_says_after_writing(tmp_path: Path) -> None:
    """Its status line follows the user's language (the summary follows --lang, else the walk's)."""
    walk = Path(__file__).parent / "fixtures" / "transcripts" / "demo-kv-pressure.ndjson"
    # Two files: -o refuses one that exists (tests/test_no_overwrite.py).
    outs = [tmp_path / "summary-zh.md", tmp_path / "summary-en.md"]
    zh, en = all_at_once([["export", str(walk), "-o", str(out)] for out in outs],
                         ["zh_CN.UTF-8", "C.UTF-8"])  # fmt: skip
    assert zh.returncode == 0 and zh.stdout == f"已写入 {outs[0]}\n", zh.stdout + zh.stderr
    assert en.returncode == 0 and en.stdout == f"wrote {outs[1]}\n", en.stdout + en.stderr


def test_every_cli_phrase_has_its_chinese() -> None:
    """Each phrase of the command line's table is translated, with the same fields, and holds no
    bare % (argparse formats help texts with %)."""
    from wizard.i18n.words_cli import HELP

    for key, phrase in HELP.items():
        assert phrase.get("zh") and CHINESE.search(phrase["zh"]), key
        fields = [set(re.findall(r"\{(\w+)\}", phrase[lang])) for lang in ("en", "zh")]
        assert fields[0] == fields[1], key
        assert "%" not in phrase["en"] + phrase["zh"], key
