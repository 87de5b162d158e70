#!/usr/bin/env python
"""How fast the widgets draw, against their budgets, measured side by side in one run.

    python scripts/bench_widgets.py      (also: make bench)

Budgets (issue 4): one timeline frame of a 200-event trace <= 20 ms; a Playground re-run
and redraw at its default size (workers=4, steps=200) <= 300 ms. Reported as the share of
each budget used (median of repeats), beside the cost of the simulate call it redraws, so
the numbers mean the same on a slower or faster machine.
"""
import statistics
import time

import asyncps as aps
from asyncps.widgets import Playground, TimelineModel, timeline_svg
from asyncps.widgets.render_params import ParameterModel, params_svg


def median_ms(fn, repeat):
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def main():
    quad = aps.problems.Quadratic(curvature=[1.0, 4.0], x0=[1.0, 1.0])
    run = aps.simulate(quad, workers=4, policy="async", lr=0.1, steps=66, compute_times=[1, 1, 1, 3])
    model = TimelineModel(run.trace)
    frames = model.frames
    pm = ParameterModel(run, quad, model)
    frame_ms = median_ms(lambda: [timeline_svg(model, f) for f in range(frames)], 5) / frames
    params_ms = median_ms(lambda: [params_svg(pm, f) for f in range(frames)], 5) / frames
    sim_ms = median_ms(lambda: aps.simulate(quad, workers=4, policy="async", lr=0.1, steps=66,
                                            compute_times=[1, 1, 1, 3]), 5)

    playground = Playground()
    values = iter([0.04, 0.05] * 20)
    rerun_ms = median_ms(lambda: setattr(playground.controls["lr"], "value", next(values)), 9)
    lsq = aps.problems.LeastSquares(n=512, dim=10, seed=0)
    one_sim_ms = median_ms(lambda: aps.simulate(lsq, workers=4, policy="async", lr=0.05, steps=200), 5)

    print(f"timeline frame ({frames}-event trace): {frame_ms:.2f} ms = {frame_ms / 20:.1%} of the "
          f"20 ms budget; {frame_ms / sim_ms:.2f}x the simulate call that made the trace")
    print(f"parameter-view frame:               {params_ms:.2f} ms = {params_ms / 20:.1%} of the 20 ms budget")
    print(f"playground re-run + redraw:          {rerun_ms:.1f} ms = {rerun_ms / 300:.1%} of the "
          f"300 ms budget; {rerun_ms / one_sim_ms:.2f}x one simulate call (it makes three)")


if __name__ == "__main__":
    main()
