"""The house's import rules: no import circle, and each concept package loads only what it may.

The rules each package's ``__init__`` states, checked two ways: statically (every import in the
source, lazy ones and ``TYPE_CHECKING`` ones included, for circles) and for real (a fresh
interpreter imports every module of a package and lists what else of ``wizard`` came with it).
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
from pathlib import Path

import networkx as nx
import pytest

WIZARD = Path(__file__).resolve().parent.parent / "wizard"

# What each package may not load when imported (its modules' load-time imports, followed through).
# A package not named here may load anything but the command line.
OUTER = ("wizard.cli", "wizard.sim")  # the commands, and the simulator (an optional part)
ABOVE_THE_WALK = (*OUTER, "wizard.ui", "wizard.report")
ABOVE_THE_PROBES = (*ABOVE_THE_WALK, "wizard.walk")
MAY_NOT_LOAD = {
    "wizard.i18n": (*ABOVE_THE_PROBES, "wizard.probes", "wizard.measure", "wizard.record",
                    "wizard.levers"),
    "wizard.measure": (*ABOVE_THE_PROBES, "wizard.probes"),
    "wizard.record": (*ABOVE_THE_PROBES, "wizard.probes"),
    "wizard.playbook": ABOVE_THE_PROBES,
    "wizard.levers": ABOVE_THE_PROBES,
    "wizard.probes": ABOVE_THE_PROBES,
    "wizard.walk": ABOVE_THE_WALK,
    "wizard.report": OUTER,
    "wizard.ui": OUTER,
}  # fmt: skip


def module_name(path: Path) -> str:
    parts = path.relative_to(WIZARD.parent).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


MODULES = {module_name(p): p for p in sorted(WIZARD.rglob("*.py"))}


def imported(name: str) -> set[str]:
    """Every wizard module ``name`` imports anywhere in its source."""
    found = set()
    for node in ast.walk(ast.parse(MODULES[name].read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and node.module.startswith("wizard"):
            for alias in node.names:
                candidate = f"{node.module}.{alias.name}"
                found.add(candidate if candidate in MODULES else node.module)
        elif isinstance(node, ast.Import):
            found |= {a.name for a in node.names if a.name.startswith("wizard.")}
    return found - {name}


def test_no_import_circle() -> None:
    graph = nx.DiGraph()
    for name in MODULES:
        graph.add_node(name)
        graph.add_edges_from((name, target) for target in imported(name) if target in MODULES)
    circles = list(nx.simple_cycles(graph))
    assert not circles, "\n".join(" -> ".join([*c, c[0]]) for c in circles)


def test_every_package_says_what_lives_there_and_what_it_may_import() -> None:
    for init in WIZARD.rglob("__init__.py"):
        doc = ast.get_docstring(ast.parse(init.read_text(encoding="utf-8")))
        assert doc, f"{init.relative_to(WIZARD.parent)} has no docstring"
    rules = {name: ast.get_docstring(ast.parse(MODULES[name].read_text(encoding="utf-8"))) or ""
             for name in MAY_NOT_LOAD}  # fmt: skip
    for name, forbidden in MAY_NOT_LOAD.items():
        for other in ("wizard.ui", "wizard.cli"):
            if other in forbidden:  # named as a word ("ui" alone is inside "build")
                short = other.removeprefix("wizard.")
                assert re.search(rf"\b{short}\b", rules[name]), (name, rules[name])


def test_the_root_holds_at_most_ten_modules() -> None:
    assert len(list(WIZARD.glob("*.py"))) <= 10, sorted(p.name for p in WIZARD.glob("*.py"))


@pytest.mark.parametrize("package", sorted(MAY_NOT_LOAD))
def test_a_package_loads_only_what_it_may(package: str) -> None:
    """Imported in a fresh interpreter (every module of the package), what of wizard came along."""
    members = sorted(n for n in MODULES if n == package or n.startswith(package + "."))
    script = (
        "import importlib, json, sys\n"
        f"for name in {members!r}: importlib.import_module(name)\n"
        "print(json.dumps(sorted(m for m in sys.modules if m.startswith('wizard'))))\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=120, cwd=WIZARD.parent)  # fmt: skip
    assert done.returncode == 0, done.stderr[-2000:]
    loaded = json.loads(done.stdout)
    wrong = [m for m in loaded for f in MAY_NOT_LOAD[package] if m == f or m.startswith(f + ".")]
    assert not wrong, f"importing {package} loads {wrong}"
