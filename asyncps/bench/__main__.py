"""python -m asyncps.bench [--quick] [--out docs/benchmarks]: every engine against the baselines.

python -m asyncps.bench classroom [...]: the classroom benchmark (bench/classroom.py), and with
--soak the room under attack (bench/soak.py); their results are kept when this one runs.

Prints ratios measured side by side in one run (asyncps / floor, asyncps / each baseline), and
writes results.json, README.md (tables and the targets) and plots to --out.
"""
import argparse
import json
import os
import platform
import sys
import time
from pathlib import Path

from . import baselines, classroom, experiments, scaling, soak
from . import live as live_view


def _ratio(a, b):
    return None if not a or not b else a / b


def targets(results):
    """Each target of issues 7 and 13: (what, achieved ratio or value, required, met)."""
    rows = []
    tp = {r["size"]: r for r in results["throughput"]}

    def cell(size, workers):
        return tp.get(size, {}).get("engines", {}).get(workers, {})

    for table in results.get("processes_scaling", {}).values():      # issue 27, each machine's
        rows += scaling.targets(table)
    for size in ("1e5", "1e6"):
        for workers, c in tp.get(size, {}).get("engines", {}).items():
            rows.append((f"processes / hand-written torch rpc loop, {size}, {workers} worker(s)",
                         _ratio(c["processes"], c["torch_rpc_loop"]), 2.0))
            if c.get("ray_actor"):
                rows.append((f"processes / Ray actor PS, {size}, {workers} worker(s)",
                             _ratio(c["processes"], c["ray_actor"]), 5.0))
    for size, r in tp.items():
        for workers, c in r["engines"].items():
            rows.append((f"rpc engine / hand-written torch rpc loop, {size}, {workers} worker(s)",
                         _ratio(c["rpc"], c["torch_rpc_loop"]), 1.0))
    sc = results["server_cost"]
    rows.append(("threads server push / one in-place update, 1e6 (lower is better, <= 2)",
                 sc["push"] / sc["update"], -2.0))
    rows.append(("simulator pushes per second, loss at every version (>= 50,000)",
                 results["simulator"]["pushes_per_s"], 50000))
    for engine, times in results["straggler"]["measured"].items():
        rows.append((f"straggler: async / sync wall-clock to target, {engine} (lower is better, <= 0.6)",
                     _ratio(times.get("async"), times.get("sync")), -0.6))
    if results.get("digits", {}).get("best", {}).get("async"):
        rows.append(("Digits CNN, 4 async workers on processes: final test accuracy",
                     results["digits"]["best"]["async"]["final"], 0.95))
    if results.get("live"):
        rows.append(("live view: pushes/s with a LiveView drawing / without, ~2,000 pushes/s run",
                     results["live"]["ratio"], live_view.TARGET))
    out = []
    for what, got, need in rows:
        met = None if got is None else (got <= -need if need < 0 else got >= need)
        out.append({"target": what, "achieved": got, "required": abs(need),
                    "direction": "<=" if need < 0 else ">=", "met": met})
    return out


def markdown(results):
    lines = ["# Benchmarks", "", f"Measured by `python -m asyncps.bench{' --quick' if results['quick'] else ''}` "
             f"on {results['machine']} ({results['date']}). All ratios are from one run, side by side.", "",
             "## Pushes per second (async, float32 torch MLP, minibatch 64)", "",
             "Every column trains the same `nn.Sequential(Linear, Tanh, Linear)` on the same data "
             "(float32, minibatches of 64). floor: its gradient and `w -= lr * g` in one process, no "
             "server. Hogwild: the pytorch/examples mnist_hogwild pattern (`share_memory()`, one "
             "process per worker, lock-free `torch.optim.SGD.step()`), in updates per second.", "",
             "| size | workers | floor | threads | processes | rpc | torch rpc loop | Ray actor | Hogwild "
             "| processes/floor | processes/Hogwild | threads/Hogwild | processes/rpc loop | rpc/rpc loop |",
             "|---|---|---|---|---|---|---|---|---|---|---|---|---|---|"]
    num = lambda v: "—" if not v else f"{v:.0f}"                    # noqa: E731
    rat = lambda a, b: "—" if _ratio(a, b) is None else f"{a / b:.2f}"   # noqa: E731
    for r in results["throughput"]:
        for workers, c in r["engines"].items():
            ray = f"{c['ray_actor']:.0f}" if c.get("ray_actor") else "not installed"
            hog = c.get("hogwild")
            lines.append(f"| {r['size']} ({r['params']:,}) | {workers} | {r['floor']:.0f} | {c['threads']:.0f} | "
                         f"{c['processes']:.0f} | {c['rpc']:.0f} | {c['torch_rpc_loop']:.0f} | {ray} | "
                         f"{num(hog)} | {rat(c['processes'], r['floor'])} | {rat(c['processes'], hog)} | "
                         f"{rat(c['threads'], hog)} | {rat(c['processes'], c['torch_rpc_loop'])} | "
                         f"{rat(c['rpc'], c['torch_rpc_loop'])} |")
    sc = results["server_cost"]
    lines += ["", "## Server cost, threads engine, 1e6 parameters", "",
              f"One push (lock, checks, update in place): {sc['push'] / sc['update']:.2f} × one "
              f"`w -= lr * g`.", "",
              f"Simulator: {results['simulator']['pushes_per_s']:,.0f} simulated pushes/s (10-dim least "
              f"squares, 8 async workers, jitter 0.3, loss at every version, best of 3); "
              f"{results['simulator']['pushes_per_s_loss_every_100']:,.0f}/s with `loss_every=100`.", "",
              "## A straggler: wall-clock to the target loss (4 workers, worker 3 4× slower)", "",
              "| | sync | async | ssp (s=2) | async / sync |", "|---|---|---|---|---|"]
    st = results["straggler"]
    for label, times in list(st["measured"].items()) + [("simulator (× delay)", st["simulated"])]:
        fmt = lambda v: "never" if v is None else f"{v:.3f} s"          # noqa: E731
        ratio = _ratio(times.get("async"), times.get("sync"))
        lines.append(f"| {label} | {fmt(times['sync'])} | {fmt(times['async'])} | {fmt(times['ssp'])} | "
                     f"{'—' if ratio is None else f'{ratio:.2f}'} |")
    lines += ["", "## Scaling beyond this machine (simulated)", "",
              f"Time to reach 2 × the optimal loss, least squares, jitter {results['scaling']['jitter']}, "
              f"communication delay {results['scaling']['delay']} per message.", "",
              "| workers | sync | async (staleness-aware lr) |", "|---|---|---|"]
    for row in results["scaling"]["rows"]:
        fmt = lambda v: "never" if v is None else f"{v:.1f}"            # noqa: E731
        lines.append(f"| {row['workers']} | {fmt(row['sync'])} | {fmt(row['async'])} |")
    lines += digits_markdown(results.get("digits"))
    lines += live_view.markdown(results["live"]) if results.get("live") else []
    lines += scaling.markdown(results.get("processes_scaling", {}))
    lines += classroom.markdown(results.get("classroom", {}), soak.markdown(results.get("classroom_soak", {})))
    lines += ["", "![throughput](throughput.png) ![scaling](scaling.png)", "", "## Targets", "",
              "| target | achieved | required | met |", "|---|---|---|---|"]
    for t in results["targets"]:
        got = "—" if t["achieved"] is None else f"{t['achieved']:,.2f}"
        met = "n/a" if t["met"] is None else ("yes" if t["met"] else "**no**")
        lines.append(f"| {t['target']} | {got} | {t['direction']} {t['required']:g} | {met} |")
    return "\n".join(lines) + "\n"


def digits_markdown(dg):
    """The time-to-accuracy section (nothing for results without it)."""
    if not dg:
        return []
    lines = ["", f"## Time to {dg['level']:.0%} test accuracy: Digits CNN, real data", "",
             f"scikit-learn's 8×8 digits, a CNN of {dg['params']:,} weights, {dg['workers']} workers on "
             f"the {dg['engine']} engine, minibatch {dg['batch_size']}, {dg['gradients']} gradients per "
             f"run (sync: {dg['gradients'] // dg['workers']} rounds), worker 3 sleeps "
             f"{dg['slowdown'][-1] * 1e3:.1f} ms per gradient (4 × one gradient, "
             f"{dg['gradient_s'] * 1e3:.2f} ms). Accuracy on the 25 % held out, every "
             f"{dg.get('loss_every', 10)}th version. "
             f"Seconds from the first pull.", "",
             "| policy | lr | seconds to " + f"{dg['level']:.0%}" + " | final accuracy | best accuracy | run |",
             "|---|---|---|---|---|---|"]
    secs = lambda v: "never" if v is None else f"{v:.2f} s"             # noqa: E731
    acc = lambda v: "—" if v is None else f"{v:.1%}"                    # noqa: E731
    for policy, row in dg["best"].items():
        name = "ssp (s=2)" if policy == "ssp" else policy
        lines.append(f"| {name} | {row['lr']:g} | {secs(row['seconds'])} | {acc(row['final'])} | "
                     f"{acc(row['peak'])} | {'—' if row['duration'] is None else secs(row['duration'])} |")
    tried = {}
    for row in dg["sweep"]:
        tried.setdefault(row["policy"], []).append(f"{row['lr']:g} ({secs(row['seconds'])})")
    if any(len(rows) > 1 for rows in tried.values()):
        lines += ["", "Each policy at the lr that reached the level first, of (lr, seconds): " +
                  "; ".join(f"{policy} " + ", ".join(rows) for policy, rows in tried.items()) + "."]
    return lines


def plots(results, out):
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, axes = plt.subplots(1, len(results["throughput"]), figsize=(4 * len(results["throughput"]), 3.2))
    axes = axes if hasattr(axes, "__len__") else [axes]
    for ax, r in zip(axes, results["throughput"]):
        workers = sorted(r["engines"])
        for name in ("threads", "processes", "rpc", "torch_rpc_loop", "ray_actor", "hogwild"):
            ys = [r["engines"][w].get(name) for w in workers]
            if all(ys):
                ax.plot(workers, [y / r["floor"] for y in ys], marker="o", label=name)
        ax.axhline(1.0, color="#888", lw=0.8, ls="--")
        ax.set(title=f"{r['size']} parameters", xlabel="workers", ylabel="pushes/s ÷ floor", xticks=workers)
    axes[0].legend(fontsize=8)
    fig.tight_layout()
    fig.savefig(out / "throughput.png", dpi=110)
    plt.close(fig)
    fig, ax = plt.subplots(figsize=(5, 3.2))
    rows = results["scaling"]["rows"]
    for name in ("sync", "async"):
        pts = [(r["workers"], r[name]) for r in rows if r[name] is not None]
        ax.plot(*zip(*pts), marker="o", label=name)
    ax.set(xscale="log", yscale="log", xlabel="workers", ylabel="time to target (simulated)",
           title="sync's barrier vs async's staleness")
    ax.legend()
    fig.tight_layout()
    fig.savefig(out / "scaling.png", dpi=110)
    plt.close(fig)


def main(argv=None, prog="python -m asyncps.bench"):
    argv = sys.argv[1:] if argv is None else list(argv)
    if argv[:1] == ["classroom"]:                         # python -m asyncps.bench classroom [--soak]
        return (soak.main if "--soak" in argv else classroom.main)(argv[1:])
    parser = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    parser.add_argument("--quick", action="store_true", help="small sizes, one lr per policy, ~2-3 minutes")
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks"))
    parser.add_argument("--render", action="store_true",
                        help="measure nothing: rewrite README.md and the targets from results.json")
    args = parser.parse_args(argv)
    if args.render:
        if not (args.out / "results.json").exists():
            print(f"{args.out / 'results.json'} does not exist: run `{prog} --out {args.out}` first")
            return 1
        results = json.loads((args.out / "results.json").read_text())
        results["targets"] = targets(results)
        (args.out / "results.json").write_text(json.dumps(results, indent=1, default=str))
        (args.out / "README.md").write_text(markdown(results))
        print(f"rewrote {args.out}/README.md from results.json")
        return 0
    sizes = ["1e3", "1e5"] if args.quick else ["1e3", "1e5", "1e6"]
    workers = [1, 2] if args.quick else [1, 2, 4]
    scale = [1, 4, 16, 64] if args.quick else [1, 2, 4, 8, 16, 32, 64, 128, 256, 512, 1024]
    if not baselines.ray_available():
        print("Ray is not installed: the Ray actor baseline is skipped (pip install 'asyncps[bench]')")
    start = time.perf_counter()
    results = {"quick": args.quick, "machine": f"{platform.machine()}, {platform.python_version()}, "
               f"{os.cpu_count()} cores", "date": time.strftime("%Y-%m-%d")}
    print("throughput (pushes per second):")
    results["throughput"] = experiments.throughput(sizes, workers, seconds=1.0 if args.quick else 2.0)
    results["server_cost"] = experiments.server_cost()
    results["simulator"] = experiments.simulator()
    print("straggler (wall-clock to the target loss):")
    results["straggler"] = experiments.straggler()
    print("scaling (simulated time to the target loss):")
    results["scaling"] = experiments.scaling(scale)
    print("digits (wall-clock to 90% test accuracy, Digits CNN, processes engine):")
    results["digits"] = experiments.digits(experiments.DIGITS_QUICK_LRS if args.quick else None)
    print("live view (pushes/s with a LiveView drawing / without, one run in turns):")
    results["live"] = live_view.measure(args.quick)
    print("the processes engine against Hogwild (updates per second, in turns):")
    table = scaling.measure(["1e5"] if args.quick else ["1e5", "1e6"], [1, 2] if args.quick else [1, 2, 4, 8],
                            pairs=1 if args.quick else 3)
    results["processes_scaling"] = scaling.kept_with(args.out / "results.json", table)   # others' kept
    results["classroom"] = classroom.kept(args.out / "results.json")   # python -m asyncps.bench.classroom
    results["classroom_soak"] = soak.kept(args.out / "results.json")   # ... --soak
    results["targets"] = targets(results)
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "results.json").write_text(json.dumps(results, indent=1, default=str))
    (args.out / "README.md").write_text(markdown(results))
    plots(results, args.out)
    print("\ntargets:")
    for t in results["targets"]:
        got = "—" if t["achieved"] is None else f"{t['achieved']:,.2f}"
        print(f"  {'ok  ' if t['met'] else 'MISS' if t['met'] is False else 'n/a '} {t['target']}: "
              f"{got} (needs {t['direction']} {t['required']:g})")
    print(f"\nwrote {args.out}/README.md, results.json, throughput.png, scaling.png "
          f"in {time.perf_counter() - start:.0f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
