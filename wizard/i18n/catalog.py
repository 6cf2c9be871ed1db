"""The translation catalogs: gettext's compiled ``.mo`` files under ``locale/<lang>/LC_MESSAGES/``,
kept with Babel from ``locale/wizard.pot`` (docs/translating.md says how). They hold argparse's own
words, which argparse asks gettext for (``wizard.cli.parser`` has it ask in ``--lang``).
"""

from __future__ import annotations

from pathlib import Path

LOCALE_DIR = Path(__file__).resolve().parent / "locale"
DOMAIN = "wizard"
