"""What `pip install latency-wizard` (no extras) puts on disk, and that the core commands run there.

Run on demand: ``python benchmarks/install_size.py [--extras all]``. Makes a fresh venv in a temporary
folder, measures its site-packages, installs this checkout into it (not editable: as a user gets
it, from the configured package index), measures again, and runs ``--help``, ``--lang zh --help``
(the compiled catalog shipped), ``replay`` and ``export`` of an example walk inside it. The size is
the install's own: the grown site-packages, .pyc files included, less the empty venv's pip and
setuptools. Goal (issue #29): at most 45 MB without extras.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import venv
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
EXAMPLE = ROOT / "transcripts" / "examples" / "1-kv-pressure-direct.ndjson"


def size(folder: Path) -> int:
    return sum(p.stat().st_size for p in folder.rglob("*") if p.is_file() and not p.is_symlink())


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--extras", default="", help="install with these extras (e.g. all)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="wizard-install-") as tmp:
        env = Path(tmp) / "venv"
        venv.create(env, with_pip=True)
        site = next((env / "lib").glob("python3*/site-packages"))
        empty = size(site)
        python = env / "bin" / "python"
        target = f"{ROOT}[{args.extras}]" if args.extras else str(ROOT)
        subprocess.run([python, "-m", "pip", "install", "-q", target], check=True)
        grown = size(site) - empty
        print(f"install ({args.extras or 'no extras'}): {grown / 1e6:.1f} MB "
              f"(site-packages {empty / 1e6:.1f} -> {size(site) / 1e6:.1f} MB)")  # fmt: skip
        wizard = env / "bin" / "latency-wizard"
        checks = {
            "--help": [wizard, "--help"],
            "--lang zh --help": [wizard, "replay", "--lang", "zh", "--help"],
            "replay": [wizard, "replay", str(EXAMPLE)],
            "export": [wizard, "export", str(EXAMPLE), "--format", "md"],
        }
        for name, command in checks.items():
            done = subprocess.run(command, capture_output=True, text=True, cwd=tmp)
            ok = done.returncode == 0 and (name != "--lang zh --help" or "用法" in done.stdout)
            print(f"{name}: {'ok' if ok else 'FAILED'} (exit {done.returncode})")
            if not ok:
                print(done.stderr[-2000:], file=sys.stderr)
        listing = subprocess.run([python, "-m", "pip", "list", "--format", "freeze"],
                                 capture_output=True, text=True, check=True).stdout.split()  # fmt: skip
        print("packages:", " ".join(listing))


if __name__ == "__main__":
    main()
