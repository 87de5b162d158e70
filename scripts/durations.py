"""python scripts/durations.py LOG...: tests/durations.json from pytest runs' `--durations=0` lines.

The seconds of each unit of work xdist hands out whole (conftest.unit_of: a test file, or one test
of a SPREAD file), setup, call and teardown summed; conftest's scheduler sends the longest first.
Run it on the output of `PYTEST_ADDOPTS=--durations=0 make test` after tests move or grow; a unit
found in a later LOG (a file run again alone, say) replaces what an earlier one said of it, and
units that no longer exist are dropped."""
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
from conftest import DURATIONS, unit_of  # noqa: E402

LINE = re.compile(r"^\s*(\d+(?:\.\d+)?)s (?:setup|call|teardown)\s+(\S.*?)\s*$")


def seconds_in(log):
    seconds = {}
    for line in Path(log).read_text(errors="replace").splitlines():
        found = LINE.match(line)
        if found:
            unit = unit_of(found.group(2))
            seconds[unit] = seconds.get(unit, 0.0) + float(found.group(1))
    if not seconds:
        sys.exit(f"{log}: no `--durations=0` lines (run pytest with --durations=0)")
    return seconds


def exists(unit):
    path, _, test = unit.partition("::")
    if not (ROOT / path).exists():
        return False
    name = test.split("[", 1)[0]
    return not name or f"def {name}(" in (ROOT / path).read_text()


def main(logs):
    seconds = {}
    for log in logs:
        seconds.update(seconds_in(log))
    ordered = dict(sorted(((u, round(s, 1)) for u, s in seconds.items() if exists(u)),
                          key=lambda us: -us[1]))
    Path(DURATIONS).write_text(json.dumps(ordered, indent=0) + "\n")
    print(f"{DURATIONS}: {len(ordered)} units, {sum(ordered.values()):.0f} s")


if __name__ == "__main__":
    if len(sys.argv) < 2:
        sys.exit(__doc__)
    main(sys.argv[1:])
