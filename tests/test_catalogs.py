"""The gettext catalogs (wizard/i18n/locale): clean for msgfmt, every msgid translated with the same
placeholders, the shipped .mo compiled from the .po as it is now, and argparse's every word (as the
running Python asks for it) in them."""

from __future__ import annotations

import argparse
import gettext
import io
import os
import re
import shutil
import subprocess
from pathlib import Path

import pytest
from babel.messages.extract import extract_from_file
from babel.messages.mofile import write_mo
from babel.messages.pofile import read_po

from wizard.cli.parser import WizardParser
from wizard.i18n.catalog import DOMAIN, LOCALE_DIR

CATALOGS = sorted(LOCALE_DIR.glob(f"*/LC_MESSAGES/{DOMAIN}.po"))
# printf-style conversions as Python's % formats them (``%%`` is a literal percent sign).
PLACEHOLDER = re.compile(r"%(?:\(\w+\))?[#0\- +]*\d*(?:\.\d+)?[diouxXeEfFgGcrsa%]")


def msgfmt_or_skip() -> str:
    found = shutil.which("msgfmt")
    if found:
        return found
    if os.environ.get("WIZARD_REQUIRE_MSGFMT") == "1":
        pytest.fail("WIZARD_REQUIRE_MSGFMT=1 but no msgfmt on PATH (apt-get install gettext)")
    pytest.skip("msgfmt is not installed (apt-get install gettext; .ci/run installs it)")


def test_there_is_a_chinese_catalog() -> None:
    assert [path.parent.parent.name for path in CATALOGS] == ["zh"]


@pytest.mark.parametrize("po", CATALOGS, ids=lambda p: p.parent.parent.name)
def test_msgfmt_check_is_clean_and_counts_nothing_untranslated(po: Path) -> None:
    done = subprocess.run([msgfmt_or_skip(), "--check", "--statistics", "-o", os.devnull, str(po)],
                          capture_output=True, text=True, env={**os.environ, "LC_ALL": "C"})  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert re.fullmatch(r"\d+ translated messages\.\n", done.stderr), done.stderr


@pytest.mark.parametrize("po", CATALOGS, ids=lambda p: p.parent.parent.name)
def test_every_msgid_is_translated_with_its_placeholders(po: Path) -> None:
    with po.open("rb") as f:
        catalog = read_po(f)
    for message in catalog:
        if not message.id:
            continue
        ids = message.id if isinstance(message.id, tuple) else (message.id,)
        strings = message.string if isinstance(message.string, tuple) else (message.string,)
        assert not message.fuzzy and all(strings), ids
        wanted = sorted(PLACEHOLDER.findall(ids[0]))
        for string in strings:
            assert sorted(PLACEHOLDER.findall(string)) == wanted, (ids, string)
        assert ids[0].endswith("\n") == all(s.endswith("\n") for s in strings), ids


@pytest.mark.parametrize("po", CATALOGS, ids=lambda p: p.parent.parent.name)
def test_the_shipped_mo_is_compiled_from_the_po_as_it_is(po: Path) -> None:
    with po.open("rb") as f:
        catalog = read_po(f)
    compiled = io.BytesIO()
    write_mo(compiled, catalog)
    assert po.with_suffix(".mo").read_bytes() == compiled.getvalue(), (
        "stale .mo: pybabel compile -d wizard/i18n/locale -D wizard (docs/translating.md)"
    )


def test_the_catalogs_hold_every_word_this_pythons_argparse_asks_for() -> None:
    asked = {
        message[1] if isinstance(message[1], str) else message[1][0]
        for message in extract_from_file("python", argparse.__file__)
    }
    for po in CATALOGS:
        with po.open("rb") as f:
            held = {m.id if isinstance(m.id, str) else m.id[0] for m in read_po(f)}
        assert asked <= held, (po, sorted(asked - held))


def test_a_chinese_parser_leaves_gettext_and_the_environment_as_it_found_them() -> None:
    domain, language = gettext.textdomain(), os.environ.get("LANGUAGE")
    parser = WizardParser(lang="zh", prog="latency-wizard")
    parser.add_argument("--rounds", choices=["full", "brief"])
    assert "用法：" in parser.format_usage() and "显示此帮助信息并退出" in parser.format_help()
    assert parser.parse_args(["--rounds", "full"]).rounds == "full"
    assert (gettext.textdomain(), os.environ.get("LANGUAGE")) == (domain, language)
    english = WizardParser(lang="en", prog="latency-wizard")
    assert english.format_usage().startswith("usage: ")
