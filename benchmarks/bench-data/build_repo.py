"""Build the git repository the shipped bench dataset points at, offline.

`inflection.jsonl` was made by `swell bench make` on a snapshot of `inflection/` (the
sdist of the MIT-licensed PyPI package `inflection` 0.5.1, its tests included). Its
tasks' `repo` is `build/inflection`: this script makes that repository again, the
snapshot and every task's base commit, with the same commit ids (fixed author and
dates), and fails if one differs. `make bench-data` runs it; so do the tests.

    python benchmarks/bench-data/build_repo.py [DEST]
"""

from __future__ import annotations

import sys
from pathlib import Path

from swell.bench.make import rebuild

HERE = Path(__file__).resolve().parent


def main() -> int:
    dest = Path(sys.argv[1]) if len(sys.argv) > 1 else HERE / "build" / "inflection"
    base = rebuild(HERE / "inflection", HERE / "inflection.jsonl", dest)
    print(f"{dest}: snapshot {base[:12]} and every task's base commit")
    return 0


if __name__ == "__main__":
    sys.exit(main())
