"""Does watching a live run slow it down? Issue 17: "with a 2,000-push/s run the view does not slow
the workers by more than 10 %".

    python -m asyncps.bench.live [--quick]      (also a section of python -m asyncps.bench)

One live run (threads engine, async, 2 workers, the benchmark's torch MLP sized for about 2,000
pushes a second on a 2-core machine) is watched and not watched in turns, in this one process:
pairs of short windows, one without a view, one with a LiveView at fps=10 drawing into its HTML
widget (no browser needed: its own thread draws the picture into the widget's value, as in a
notebook). Which comes first alternates. Reported: pushes/s of each arm, and with view / without
of each pair, as the median over the pairs and its spread; whether the median is >= 0.90. A ratio
of windows side by side, not a time: a busy neighbour or a slow spell touches both arms of a pair
(on a shared machine a few pairs still land on either side of one; the median is the measure).
"""
import argparse
import statistics
import sys
import time

from ..engines.train import train
from ..problems.torch_model import from_torch
from ..widgets.live import LiveView
from ..widgets.render_live import StalenessTally, live_svg
from . import workloads

WORKERS = 2
SIZE = (112, 560, 10)  # workloads.py's MLP at 68,890 parameters: 2,000-2,500 pushes/s on 2 cores
BATCH, LR, LOSS_EVERY = workloads.BATCH, 0.01, 10
FPS = 10
WARMUP, SETTLE = 1.0, 0.2   # seconds before the first window; after a view is made
TARGET = 0.90         # the view may cost at most 10 % of the pushes


def problem(seed=0):
    """workloads.py's MLP (float32, minibatches of 64) at SIZE: (inputs, hidden, classes)."""
    dim, hidden, classes = SIZE
    X, y, rng = workloads.blobs(workloads.EXAMPLES, dim, classes, seed)
    return from_torch(workloads.network(dim, hidden, classes, rng), X, y, metric=None,
                      test_fraction=workloads.HELD_OUT, seed=seed, name=f"MLP-{dim}-{hidden}")


def pushes_in(live, seconds):
    """The run's pushes per second over the next `seconds`."""
    first, start = live.state["pushes"], time.perf_counter()
    time.sleep(seconds)
    last, end = live.state["pushes"], time.perf_counter()
    return (last - first) / (end - start)


def measure(quick=False, log=print):
    """One live run, watched and not in turns: in each pair one window of `seconds` without a
    view and one with a LiveView drawing (made at the window's start, closed at its end; which
    comes first alternates). Short windows side by side see the same machine: a busy neighbour
    or a slow spell touches both arms of a pair."""
    pairs, seconds = (3, 0.5) if quick else (40, 0.5)
    prob = problem()
    live = train(prob, workers=WORKERS, policy="async", lr=LR, steps=10**9, engine="threads",
                 batch_size=BATCH, loss_every=LOSS_EVERY, live=True)
    rows = []
    try:
        time.sleep(WARMUP)
        for k in range(pairs):
            got = {}
            for view in ((False, True) if k % 2 == 0 else (True, False)):
                if not view:
                    got["without"] = pushes_in(live, seconds)
                    continue
                watch = LiveView(live, fps=FPS)
                try:
                    time.sleep(SETTLE)
                    drawn, start = watch.redraws, time.perf_counter()
                    got["with"] = pushes_in(live, seconds)
                    got["redraws_per_s"] = (watch.redraws - drawn) / (time.perf_counter() - start)
                finally:
                    watch.close()
            got["ratio"] = got["with"] / got["without"]
            got["version"] = live.state["version"]
            rows.append(got)
            log(f"  pair {k + 1}: without {got['without']:,.0f} pushes/s, with a view "
                f"{got['with']:,.0f} ({got['redraws_per_s']:.1f} redraws/s): ratio "
                f"{got['ratio']:.3f} (server at v{got['version']:,})")
    finally:
        live.stop()
    ratios = [r["ratio"] for r in rows]
    result = {"workers": WORKERS, "params": prob.dim, "size": SIZE, "fps": FPS, "seconds": seconds,
              "pairs": rows, "without": statistics.median(r["without"] for r in rows),
              "with": statistics.median(r["with"] for r in rows),
              "redraws_per_s": statistics.median(r["redraws_per_s"] for r in rows),
              "ratio": statistics.median(ratios), "ratio_min": min(ratios),
              "ratio_max": max(ratios), "ratio_quartiles": quartiles(ratios),
              "draw_ms": draw_ms(live.result().trace), "target": TARGET}
    result["met"] = result["ratio"] >= TARGET
    return result


def quartiles(values):
    """The first and third quartile: the middle half of the pairs lies between them."""
    if len(values) < 2:
        return values[0], values[0]
    q1, _, q3 = statistics.quantiles(values, n=4, method="inclusive")
    return q1, q3


def draw_ms(trace, repeat=20):
    """The median milliseconds of one picture of `trace` (its newest 40 events) as the view draws
    it: the staleness histogram kept up to date by a StalenessTally, not counted from v0."""
    state = {"version": len(trace.losses) - 1, "pushes": len(trace.pushes), "lr": LR,
             "paused": False, "running": True, "loss": None, "lost": []}
    tally = StalenessTally()
    tally.update(trace)
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        live_svg(trace, state, counts=tally.update(trace))
        times.append((time.perf_counter() - start) * 1000)
    return statistics.median(times)


def report(result):
    """The result in a few lines."""
    q1, q3 = result["ratio_quartiles"]
    return (f"live view cost: threads engine, async, {result['workers']} workers, an MLP of "
            f"{result['params']:,} parameters, view at fps={result['fps']}, "
            f"{len(result['pairs'])} pairs of {result['seconds']:g} s windows\n"
            f"  without a view: {result['without']:,.0f} pushes/s (median)\n"
            f"  with a view:    {result['with']:,.0f} pushes/s (median), "
            f"{result['redraws_per_s']:.1f} redraws/s, {result['draw_ms']:.1f} ms a picture\n"
            f"  ratio with/without: {result['ratio']:.3f} (median; from {result['ratio_min']:.3f} "
            f"to {result['ratio_max']:.3f}, the middle half {q1:.3f} to {q3:.3f}); needs >= "
            f"{result['target']:.2f}: {'met' if result['met'] else 'NOT met'}")


def markdown(result):
    """The README section of this result."""
    q1, q3 = result["ratio_quartiles"]
    return ["", "## A live view's cost (issue 17)", "",
            f"One live run (threads engine, async, {result['workers']} workers, the MLP above at "
            f"{' × '.join(str(n) for n in result['size'])} (inputs, hidden, classes): "
            f"{result['params']:,} parameters, minibatch {BATCH}) watched and not in turns: "
            f"{len(result['pairs'])} pairs of {result['seconds']:g} s windows, one without a view, "
            f"one with a LiveView drawing at fps={result['fps']} (`python -m asyncps.bench.live`). "
            f"Pushes per second, medians over the pairs.", "",
            "| without a view | with a view | redraws/s | one picture | with / without (median) "
            "| middle half of the pairs | all pairs |", "|---|---|---|---|---|---|---|",
            f"| {result['without']:,.0f} pushes/s | {result['with']:,.0f} pushes/s | "
            f"{result['redraws_per_s']:.1f} | {result['draw_ms']:.1f} ms | {result['ratio']:.3f} | "
            f"{q1:.3f} – {q3:.3f} | {result['ratio_min']:.3f} – {result['ratio_max']:.3f} |"]


def main(argv=None):
    parser = argparse.ArgumentParser(prog="python -m asyncps.bench.live",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="3 short pairs (a few seconds)")
    args = parser.parse_args(argv)
    print(report(measure(args.quick)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
