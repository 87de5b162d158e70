"""`make reliability`: load and soak every engine (asyncps.bench.reliability), run the fault tests,
count the hostile inputs the property tests try, and write docs/reliability.md (+ .json).

This script lives in the repository because it reads and runs files under tests/; the installed
package (asyncps.bench.reliability) has only the measurements.
"""
import argparse
import json
import os
import re
import subprocess
import sys
import time
from pathlib import Path

from asyncps.bench.reliability import load, soak

ROOT = Path(__file__).resolve().parents[1]


def hostile_count():
    """How many hostile inputs the property tests try (their Hypothesis settings, summed)."""
    text = ROOT / "tests" / "test_hostile.py"
    return sum(int(n) for n in re.findall(r"max_examples=(\d+)", text.read_text())) \
        if text.exists() else None


def faults_survived(root):
    """Run the fault tests and count those that pass."""
    out = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider",
                          str(root / "tests" / "test_faults.py")], capture_output=True, text=True, cwd=root)
    line = [l for l in out.stdout.splitlines() if " passed" in l or " failed" in l][-1:]
    passed = int(line[0].split(" passed")[0].split()[-1]) if line and " passed" in line[0] else 0
    return passed, out.returncode == 0


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python scripts/reliability.py")
    parser.add_argument("--out", type=Path, default=Path("docs/reliability.md"))
    args = parser.parse_args(argv)
    root = ROOT
    loads = [load("threads", 64, p) for p in ("async", "sync", "ssp")]
    loads += [load("processes", 16, p) for p in ("async", "sync", "ssp")]
    soaks = [soak("threads", 100_000), soak("processes", 20_000), soak("rpc", 20_000)]
    faults, ok = faults_survived(root)
    lines = ["# Reliability", "", f"Measured by `make reliability` on {os.cpu_count()} cores, "
             f"{time.strftime('%Y-%m-%d')}.", "",
             "| what | figure |", "|---|---|"]
    for r in loads:
        lines.append(f"| load: {r['engine']}, {r['workers']} workers, {r['policy']} | {r['versions']} versions in "
                     f"{r['seconds']:.1f} s, invariants {'hold' if not r['violations'] else 'BROKEN'}, peak "
                     f"memory +{r['peak_growth_mb']:.1f} MB = {r['per_worker_mb']:.2f} MB per worker "
                     f"(a parameter copy is {r['one_copy_per_worker_mb'] / r['workers']:.3f} MB) |")
    for r in soaks:
        lines.append(f"| soak: {r['engine']}, {r['pushes']:,} async pushes | lost {r['lost']}, "
                     f"{'exact' if r['exact'] else 'NOT exact'}; memory after warm-up "
                     f"{100 * r['growth_after_warmup']:+.1f} %; trace kept {r['events_kept']:,} events, "
                     f"summarised {r['events_beyond']:,}; {r['seconds']:.1f} s |")
    hostile = hostile_count()
    lines += [f"| hostile inputs tried (property tests, per run) | {hostile} |",
              f"| faults survived (tests/test_faults.py) | {faults} {'(all passed)' if ok else '(SOME FAILED)'} |",
              f"| updates lost under the default lock | {sum(r['lost'] for r in soaks)} |"]
    text = "\n".join(lines) + "\n"
    print(text)
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text)
    (args.out.with_suffix(".json")).write_text(json.dumps({"load": loads, "soak": soaks, "faults": faults,
                                                          "hostile": hostile}, indent=1, default=str))
    return 0


if __name__ == "__main__":
    sys.exit(main())
