#!/usr/bin/env python
"""docs/timeline-animated.svg, the README's animated Timeline: 00-start-here's run (two workers,
async, worker 1 slower), as the Timeline shows it outside a kernel (Timeline.animated_svg).

    python scripts/readme_figure.py          # writes docs/timeline-animated.svg
    python scripts/readme_figure.py --check  # exit 1 if the committed file is not what it makes
"""
import sys
from pathlib import Path

import asyncps as aps

FIGURE = Path(__file__).resolve().parents[1] / "docs" / "timeline-animated.svg"


def figure():
    problem = aps.problems.Quadratic(curvature=[1.0, 4.0], x0=[1.0, 1.0])
    run = aps.simulate(problem, workers=2, policy="async", lr=0.1, steps=6, compute_times=[1, 1.5])
    return aps.widgets.Timeline(run).animated_svg()


if __name__ == "__main__":
    made = figure()
    if sys.argv[1:] == ["--check"]:
        same = FIGURE.exists() and FIGURE.read_text() == made
        print(f"{FIGURE.name}: {'as the package makes it' if same else 'out of date: run scripts/readme_figure.py'}")
        sys.exit(0 if same else 1)
    FIGURE.write_text(made)
    print(f"wrote {FIGURE} ({len(made) / 1000:.1f} KB)")
