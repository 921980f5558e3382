"""mypy on sqlanon/ against a committed baseline that only shrinks.

The baseline lists today's errors as ``file: message [code]`` (no line numbers, which every edit
above an error would shift), one per line, repeated as often as mypy reports it. The gate fails
on an error the baseline does not list (a new one), and on a listed error mypy no longer reports
(fixed: remove it with ``--update``, so that it cannot come back unnoticed).

Usage:  python .ci/typecheck.py [--update]
"""
from __future__ import annotations

import re
import subprocess
import sys
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
BASELINE = ROOT / ".ci" / "mypy-baseline.txt"
LINE = re.compile(r"line \d+")
ERROR = re.compile(r"^(?P<file>[^:]+):\d+(?::\d+)?: error: (?P<message>.*)$")


def current() -> Counter[str]:
    out = subprocess.run([sys.executable, "-m", "mypy", "sqlanon", "--no-error-summary", "--no-pretty"],
                         cwd=ROOT, capture_output=True, text=True, check=False)
    if out.returncode not in (0, 1):
        sys.exit(f"mypy did not run: {out.stderr.strip() or out.stdout.strip()}")
    found: Counter[str] = Counter()
    for line in out.stdout.splitlines():
        m = ERROR.match(line)
        if m:
            message = LINE.sub("line N", m["message"])
            found[f"{m['file']}: {message}"] += 1
    return found


def main() -> None:
    if not BASELINE.exists() and "--update" not in sys.argv[1:]:
        sys.exit(f"mypy: no baseline at {BASELINE.relative_to(ROOT)} (python .ci/typecheck.py --update writes it)")
    found = current()
    listed = Counter(BASELINE.read_text(encoding="utf-8").splitlines()) if BASELINE.exists() else Counter()
    new, fixed = found - listed, listed - found
    if new and BASELINE.exists():
        print("mypy: errors the baseline does not list:", *sorted(new.elements()), sep="\n  ", file=sys.stderr)
        sys.exit(1)
    if "--update" in sys.argv[1:]:  # never adds an error, except when it writes the first baseline
        BASELINE.write_text("".join(f"{e}\n" for e in sorted(found.elements())), encoding="utf-8")
        print(f"mypy: baseline now lists {sum(found.values())} error(s)")
        return
    if fixed:
        print("mypy: fixed, remove them from the baseline (python .ci/typecheck.py --update):",
              *sorted(fixed.elements()), sep="\n  ", file=sys.stderr)
        sys.exit(1)
    print(f"mypy: no new errors ({sum(found.values())} in the baseline)")


if __name__ == "__main__":
    main()
