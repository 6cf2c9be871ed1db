"""Prompts read only what was typed for them (issue #27 item 4), in a real pty.

Each test drives a small script that asks through ``InteractiveOperator`` as the walk does; the
script waits for a file between two questions, so the keys typed "during the walk" are typed
while no prompt reads them, without any timing in the test.
"""

from __future__ import annotations

import os
import sys
import time
from pathlib import Path

import pexpect

HEAD = (
    "import asyncio, pathlib, time\n"
    "from wizard.ui.interactive import InteractiveOperator\nfrom wizard.walk.operator import Decision\n"
    "from wizard.playbook import Finding, Question\n"
    "def confirm(id_, en, zh):\n"
    "    return Question(id_, 'confirm', {'en': en, 'zh': zh}, default=True)\n"
)


def spawn(tmp_path: Path, body: str) -> pexpect.spawn:
    script = tmp_path / "ask.py"
    script.write_text(HEAD + body, encoding="utf-8")
    env = {**os.environ, "PROMPT_TOOLKIT_NO_CPR": "1", "TERM": "xterm",
           "PYTHONPATH": str(Path(__file__).parent.parent)}  # fmt: skip
    return pexpect.spawn(sys.executable, [str(script)], encoding="utf-8", timeout=60, env=env,
                         dimensions=(40, 160))  # fmt: skip


def drawn(child: pexpect.spawn, prompt: str) -> None:
    """Wait for a prompt; prompt_toolkit draws the question before it reads keys."""
    child.expect(prompt)
    time.sleep(0.5)


def test_keys_typed_between_questions_answer_nothing(tmp_path: Path) -> None:
    """`n` then Enter (and one Enter more) at a yes/no question answers it and only it; keys
    typed while the walk measures are discarded: the next question waits for its own answer.
    Before: `n` alone answered, the queued Enter answered the next question Yes, unseen."""
    go = tmp_path / "go"
    child = spawn(tmp_path, (
        "op = InteractiveOperator()\n"
        "first = asyncio.run(op.ask(confirm('q1', 'Validate with LoadGen?', 'q1'), True, 'en'))\n"
        "print('BUSY', flush=True)\n"
        f"while not pathlib.Path({str(go)!r}).exists(): time.sleep(0.05)\n"
        "second = asyncio.run(op.ask(confirm('q2', 'Apply it?', 'q2'), True, 'en'))\n"
        "print('ANSWERS', first, second)\n"
    ))  # fmt: skip
    drawn(child, r"Validate with LoadGen\? \(Y/n\)")
    child.send("n\r\r")
    child.expect("BUSY")  # the walk measures: nobody reads the terminal
    child.send("y\r")  # typed meanwhile, before the next question was shown
    go.touch()
    drawn(child, r"Apply it\? \(Y/n\)")
    child.send("n\r")
    child.expect(r"ANSWERS (\w+) (\w+)")
    assert child.match.groups() == ("False", "False")
    child.expect(pexpect.EOF)


def test_a_word_that_is_not_yes_or_no_is_refused(tmp_path: Path) -> None:
    """`maybe` is no answer (it answered Yes on its `y`, leaving `be` for the next prompt): a
    one-line hint, the question again; the Chinese walk takes 是/否 and y/n alike."""
    child = spawn(tmp_path, (
        "op = InteractiveOperator()\n"
        "print('ANSWER', asyncio.run(op.ask(confirm('q', 'Go on?', '继续吗？'), True, 'en')))\n"
        "print('ANSWER', asyncio.run(op.ask(confirm('q', 'Go on?', '继续吗？'), True, 'zh')))\n"
    ))  # fmt: skip
    drawn(child, r"Go on\? \(Y/n\)")
    child.send("maybe\r")
    child.expect("answer yes or no \\(y or n\\), then Enter")
    drawn(child, r"Go on\? \(Y/n\)")
    child.send("no\r")
    child.expect("ANSWER False")
    drawn(child, "继续吗？（是/否，回车 = 是）")
    child.send("也许\r")
    child.expect("请回答 是 或 否")
    drawn(child, "继续吗？")
    child.send("否\r")
    child.expect("ANSWER False")
    child.expect(pexpect.EOF)


def test_a_change_is_applied_only_on_an_explicit_answer(tmp_path: Path) -> None:
    """The question that applies a change has no default: Enter alone is refused with a hint
    (it applied the change: "apply it for me" was the highlighted choice); its number answers."""
    child = spawn(tmp_path, (
        "class Stack:\n"
        "    def can_apply(self, change): return True\n"
        "    def apply(self, change):\n"
        "        return Decision(applied=True, layer='nginx', parameter='proxy_buffering')\n"
        "finding = Finding('LAT001', 'proxy_buffering', 'warn', {}, {}, {},\n"
        "                  {'layer': 'nginx', 'parameter': 'proxy_buffering',\n"
        "                   'apply': 'proxy_buffering off;'}, ())\n"
        "op = InteractiveOperator(Stack())\n"
        "print('APPLIED', asyncio.run(op.decide(finding, 'en')).applied)\n"
    ))  # fmt: skip
    drawn(child, r"\[3\] I applied it myself")
    child.send("\r")
    child.expect(r"type the number of your choice \(1/2/3\), then Enter")
    drawn(child, r"\[3\] I applied it myself")
    child.send("2\r")  # not applied (skip)
    child.expect(r"APPLIED (\w+)")
    assert child.match.group(1) == "False"
    child.expect(pexpect.EOF)
