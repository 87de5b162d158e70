"""python -m asyncps.bench.classroom [--clients 30] [--steps N] [--problem lsq]: a room of students.

Issue 29: "a room with 30 joined clients (processes) on this machine sustains the run; the pushes
per second and the lecturer's view cost are reported".

The room (aps.classroom.serve: one ZeroMQ ROUTER socket served by one thread) is opened in this
process; the students are `clients` processes of their own (multiprocessing, "spawn"), started
once and reused room after room: each is told a room's address and token through its pipe, calls
aps.classroom.join(...) with its own name, and sends back its Contribution. Each room waits for
its class and is started (`room.start()`) once every seat is taken: the run, and its trace's
clock, start when the class is seated, so the pushes per second are those of the whole class.
Every room makes about `steps` pushes (async: `steps` versions; sync: `steps // clients` rounds).

In turns, `rounds` times: a room with 1 student, then a room with `clients` students, under each
policy. Reported side by side (ratios of rooms measured in the same run, never a bare time):
- pushes per second with 1 student and with all of them, their ratio, and that ratio over the
  number of students (1.0: the room's single thread scales perfectly), from the run's first pull
  to its last push (students ask whether the run started every 0.25 s: the first pull comes that
  long after room.start() at most);
- the mean and the largest staleness, how many students were lost (must be 0), the invariants;
- where the CPU went: the room thread's CPU seconds per second of the run (1.0: it is saturated),
  the room's process and the students' processes, against the machine's cores;
- the lecturer's view: the time to compute `room.state` and to draw one frame of the live view
  (render_live.live_svg, called on the room's trace as the LiveView widget calls it), on the
  trace of the largest async room, as a share of one core at 10 refreshes a second.

The room's per-student rate limit (`max_rate`, 2,000 messages a second by default: a pull and a
push a gradient, so 1,000 gradients a second) holds back a student who computes faster than that
(refused, counted, and the student waits): the benchmark opens its rooms with a limit far above
any student's rate (`--max-rate`), since the limit is the room's policy, not its capacity.

`--soak` (python -m asyncps.bench classroom --soak [--seconds 120]): the room under attack
instead, 30 students and 5 attackers (asyncps/bench/soak.py).

Results are kept per machine in docs/benchmarks/results.json under "classroom" (this machine's
table replaces its earlier one, others are kept) and shown in docs/benchmarks/README.md.
"""
import argparse
import cProfile
import io
import json
import multiprocessing
import multiprocessing.connection
import os
import platform
import pstats
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from ..core.invariants import violations

ROUNDS, STEPS, CLIENTS = 3, 5000, 30
MAX_RATE = 1e9          # messages a second a student may send: no limit (see the docstring)
FPS, WINDOW, WIDTH = 10, 40, 720      # the live view's defaults (asyncps/widgets/live.py)
SEATED = 120.0          # seconds the students have to take their seats
JOB = 120.0             # seconds a student has to send back its Contribution after a run ends


def lsq():
    from ..problems.synthetic import LeastSquares

    return LeastSquares(n=4096, dim=32, seed=0)       # docs/classroom.md's problem


PROBLEMS = {"lsq": (lsq, "LeastSquares(n=4096, dim=32)", 0.01)}   # name: (make, words, lr)


def machine():
    """This machine in words: scaling.machine()'s (CPU, cores, Python, torch), the name the other
    tables of docs/benchmarks use; without torch (the classroom needs none), the same less torch."""
    from . import scaling

    try:
        return scaling.machine()
    except ImportError:
        return (f"{platform.processor() or platform.machine()}, {os.cpu_count()} cores, "
                f"Python {platform.python_version()}")


# -- the students: processes of their own -------------------------------------------------------
def _student(pipe, problem_name):
    """A student's process: build the problem, then join each room it is told of; None: leave."""
    from ..classroom import join

    try:
        problem = PROBLEMS[problem_name][0]()
        pipe.send("ready")
        while True:
            job = pipe.recv()
            if job is None:
                return
            address, token, name = job
            try:
                c = join(address, token, name, problem, timeout=60.0, progress=False)
                pipe.send({"name": c.name, "worker": c.worker, "pushes": c.pushes,
                           "mean_staleness": c.mean_staleness, "stopped": c.stopped})
            except Exception as err:                 # noqa: BLE001 - reported, not raised here
                pipe.send({"name": name, "error": f"{type(err).__name__}: {err}"})
    except (KeyboardInterrupt, EOFError, BrokenPipeError):
        return                                       # the benchmark was interrupted or is gone
    finally:
        pipe.close()


class Students:
    """`n` student processes (multiprocessing, "spawn"), started at once, stopped by close()."""

    def __init__(self, n, problem_name, start_method="spawn"):
        context = multiprocessing.get_context(start_method)
        self.pipes, self.processes = [], []
        try:
            for k in range(n):
                ours, theirs = context.Pipe()
                p = context.Process(target=_student, args=(theirs, problem_name),
                                    name=f"asyncps-student-{k}", daemon=True)
                p.start()
                theirs.close()
                self.pipes.append(ours)
                self.processes.append(p)
            for k, pipe in enumerate(self.pipes):
                if not pipe.poll(SEATED) or pipe.recv() != "ready":
                    raise RuntimeError(f"student process {k} did not start within {SEATED:g} s")
        except BaseException:
            self.close()
            raise

    def send(self, k, job):
        self.pipes[k].send(job)

    def collect(self, ks, timeout=JOB):
        """The answers of students `ks` (each a Contribution as a dict, or {"error": ...})."""
        out, deadline = {}, time.monotonic() + timeout
        waiting = {self.pipes[k]: k for k in ks}
        while waiting:
            left = deadline - time.monotonic()
            ready = multiprocessing.connection.wait(list(waiting), timeout=max(0.0, left))
            if not ready:
                raise RuntimeError(f"students {sorted(waiting.values())} sent nothing back within "
                                   f"{timeout:g} s")
            for pipe in ready:
                out[waiting.pop(pipe)] = pipe.recv()
        return out

    def cpu(self, ks):
        """CPU seconds (user + system) the processes of students `ks` have used so far."""
        import psutil

        total = 0.0
        for k in ks:
            try:
                t = psutil.Process(self.processes[k].pid).cpu_times()
                total += t.user + t.system
            except psutil.Error:
                pass
        return total

    def close(self):
        """Every student leaves: told to, then joined; one that does not is terminated, then
        killed. Nothing is left behind."""
        for pipe in self.pipes:
            try:
                pipe.send(None)
            except (OSError, ValueError):
                pass
        deadline = time.monotonic() + 10.0
        for p in self.processes:
            p.join(max(0.1, deadline - time.monotonic()))
        for p in self.processes:
            if p.is_alive():
                p.terminate()
                p.join(5.0)
            if p.is_alive():
                p.kill()
                p.join(5.0)
        for pipe in self.pipes:
            pipe.close()
        for p in self.processes:
            if p.exitcode is not None:
                p.close()
        self.pipes, self.processes = [], []

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()


def seat_class(students, ks, address, token, seated):
    """Send students `ks` to the room at `address`, all at once, as a class joins; then wait until
    `seated()` (how many took their seat; None: the room is gone) counts them all. (Every student
    here comes from 127.0.0.1, so their handshakes share the door's budget for one address: a
    student whose handshake finds it spent is told to try again, ZAP 300, and is seated a moment
    later.)"""
    for k in ks:
        students.send(k, (address, token, f"student-{k:02d}"))
    deadline = time.monotonic() + SEATED
    while (n := seated()) is None or n < len(ks):
        if n is None or time.monotonic() > deadline:
            raise RuntimeError(f"{n} of {len(ks)} students took their seat within {SEATED:g} s"
                               + (" (the room is gone)" if n is None else ""))
        time.sleep(0.01)


# -- one room ---------------------------------------------------------------------------------
def _process_cpu():
    import psutil

    t = psutil.Process().cpu_times()
    return t.user + t.system


def _instrument(room, switch, profile=False):
    """Measure the room's thread from within: its CPU time (time.thread_time) and the clock at
    the first message through the room's boundary (`room._boundary`, where every message that
    passed the door is handled) once `switch["on"]` is set, and again at the first message after
    which the run is done. `profile`: cProfile the thread over the same span (cProfile profiles
    the thread that enables it: here, the room's own)."""
    boundary, server = room._boundary, room.server
    profiler = switch["profiler"] = cProfile.Profile() if profile else None

    def boundary_measured(who, key, fd, frames):
        if switch["on"] and "cpu0" not in switch:
            switch["cpu0"], switch["t0"] = time.thread_time(), time.perf_counter()
            if profiler is not None:
                profiler.enable()
        boundary(who, key, fd, frames)
        if server.done and "cpu0" in switch and "cpu1" not in switch:
            switch["cpu1"], switch["t1"] = time.thread_time(), time.perf_counter()
            if profiler is not None:
                profiler.disable()

    room._boundary = boundary_measured


def top_functions(profiler, n=12):
    """The `n` functions the room's thread spent most of its own time in: (share, calls, name)."""
    stats = pstats.Stats(profiler, stream=io.StringIO())
    rows = [(tt, nc, f"{Path(file).name}:{line}({name})" if file != "~" else name)
            for (file, line, name), (cc, nc, tt, ct, callers) in stats.stats.items()]
    total = sum(r[0] for r in rows) or 1.0
    return [{"share": tt / total, "calls": nc, "function": name}
            for tt, nc, name in sorted(rows, reverse=True)[:n]]


def view_cost(room, repeat=10, fps=FPS, window=WINDOW, width=WIDTH):
    """Milliseconds to compute `room.state` and to draw one frame of the live view on the room's
    trace, as LiveView._draw draws it: live_svg(trace, live.state, window, width, counts of a
    StalenessTally kept up to date); medians of `repeat`. `share_of_core`: both, `fps` times a
    second, as a share of one core's time."""
    from ..widgets.render_live import StalenessTally, live_svg

    trace, live = room.live.trace, room.live
    tally = StalenessTally()
    start = time.perf_counter()
    tally.update(trace)                                   # the view's first frame counts them all
    first_tally = time.perf_counter() - start

    def timed(call):
        times = []
        for _ in range(repeat):
            start = time.perf_counter()
            call()
            times.append(time.perf_counter() - start)
        return statistics.median(times) * 1000

    state_ms = timed(lambda: room.state)
    live_state_ms = timed(lambda: live.state)
    frame_ms = timed(lambda: live_svg(trace, live.state, window, width, counts=tally.update(trace)))
    return {"pushes_in_trace": len(trace.pushes), "events_in_trace": len(trace.events),
            "students": len(room.seats), "room_state_ms": state_ms, "live_state_ms": live_state_ms,
            "frame_ms": frame_ms, "first_tally_ms": first_tally * 1000, "fps": fps,
            "window": window, "share_of_core": (state_ms + frame_ms) * fps / 1000}


def room_run(students, problem, clients, policy, steps, lr, max_rate=MAX_RATE, view=False,
             profile=False, log=print):
    """One room of `clients` students (the first `clients` of `students`) making about `steps`
    pushes under `policy`. Returns (a row of numbers, the Run)."""
    from ..classroom import serve

    versions = steps if policy == "async" else max(1, steps // clients)
    room = serve(problem, workers=clients, policy=policy, lr=lr, steps=versions, max_rate=max_rate)
    switch = {"on": False}
    _instrument(room, switch, profile)
    ks = list(range(clients))
    try:
        seat_class(students, ks, room.address, room.token,    # the room waits for its class ...
                   lambda: len(room.seats) if room.live.running else None)
        cpu = (_process_cpu(), students.cpu(ks))
        wall = time.perf_counter()
        switch["on"] = True
        room.start()                                      # ... and starts once it is seated
        while not room.server.done and room.live.running:
            time.sleep(0.005)
        wall = time.perf_counter() - wall
        end = (_process_cpu(), students.cpu(ks))
        run = room.result(JOB)
        contributions = students.collect(ks)
        cost = view_cost(room) if view else None
        state = room.state
    finally:
        room.stop()
    trace = run.trace
    pushes, pulls = trace.pushes, trace.pulls             # the trace's clock starts at start() ...
    first = pulls[0].time if pulls else 0.0               # ... the class hears of it within
    seconds = pushes[-1].time - first if pushes else float("nan")   # WAIT_POLL: from the first pull
    staleness = [p.staleness for p in pushes]
    per_student = np.bincount([p.worker for p in pushes], minlength=clients)
    errors = {c["name"]: c["error"] for c in contributions.values() if "error" in c}
    row = {"policy": policy, "clients": clients, "versions": len(run.losses) - 1,
           "pushes": len(pushes), "seconds": seconds, "wall_seconds": wall, "first_pull": first,
           "pushes_per_s": len(pushes) / seconds if pushes else 0.0,
           "mean_staleness": float(np.mean(staleness)) if staleness else None,
           "max_staleness": int(max(staleness)) if staleness else None,
           "lost": len(trace.lost), "violations": [str(v) for v in violations(trace)],
           "fewest_pushes": int(per_student.min()), "most_pushes": int(per_student.max()),
           "every_student_pushed": bool((per_student > 0).all()),
           "contributions_match": all(c.get("pushes") == per_student[c["worker"]]
                                      for c in contributions.values() if "error" not in c),
           "errors": errors, "refused": dict(room.refused), "message": run.message,
           "diverged": bool(run.diverged), "loss_ratio": run.losses[-1] / run.losses[0],
           "room_thread_busy": (switch["cpu1"] - switch["cpu0"]) / (switch["t1"] - switch["t0"])
           if "cpu1" in switch else None,
           "room_process_cores": (end[0] - cpu[0]) / wall, "students_cores": (end[1] - cpu[1]) / wall,
           "room_thread_us_per_push": (switch["cpu1"] - switch["cpu0"]) / len(pushes) * 1e6
           if "cpu1" in switch and pushes else None,
           "room_process_us_per_push": (end[0] - cpu[0]) / len(pushes) * 1e6 if pushes else None,
           "students_us_per_push": (end[1] - cpu[1]) / len(pushes) * 1e6 if pushes else None,
           "students_in_state": [s["name"] for s in state["students"]]}
    if cost is not None:
        row["view"] = cost
    if profile:
        row["profile"] = top_functions(switch["profiler"])
    log(f"    {policy:5} {clients:3} student(s): {row['pushes_per_s']:8,.0f} pushes/s over "
        f"{seconds:.2f} s, staleness mean {row['mean_staleness'] or 0:.1f} max "
        f"{row['max_staleness']}, {row['lost']} lost, room thread busy "
        f"{row['room_thread_busy'] or float('nan'):.2f}, students {row['students_cores']:.2f} cores")
    return row, run


# -- the benchmark ----------------------------------------------------------------------------
def measure(clients=CLIENTS, steps=STEPS, problem="lsq", policies=("async", "sync"), rounds=ROUNDS,
            lr=None, max_rate=MAX_RATE, profile=False, keep_runs=False, log=print):
    """In turns, `rounds` times: under each policy a room with 1 student, then one with `clients`
    (the same student processes, started once). The view's cost is measured on the trace of the
    last async room of `clients`. `profile`: one more async room of `clients`, its thread
    profiled (not counted in the rates). `keep_runs`: the Runs too, under "runs_kept" (not JSON)."""
    make, words, default_lr = PROBLEMS[problem]
    prob, lr = make(), default_lr if lr is None else lr
    out = {"machine": machine(), "cores": os.cpu_count(), "date": time.strftime("%Y-%m-%d"),
           "problem": words, "params": int(np.asarray(prob.x0).size), "clients": clients,
           "steps": steps, "rounds": rounds, "lr": lr, "max_rate": max_rate,
           "start_method": "spawn", "rows": []}
    kept = []
    start = time.perf_counter()
    log(f"  starting {clients} student processes (spawn) ...")
    with Students(clients, problem) as students:
        out["startup_seconds"] = time.perf_counter() - start
        for r in range(rounds):
            log(f"  round {r + 1} of {rounds}")
            for policy in policies:
                for n in dict.fromkeys((1, clients)):
                    last = r == rounds - 1 and policy == "async" and n == clients
                    row, run = room_run(students, prob, n, policy, steps, lr, max_rate, view=last,
                                        log=log)
                    row["round"] = r
                    out["rows"].append(row)
                    kept.append(run)
                    if last:
                        out["view"] = row.pop("view")
        if profile:
            log("  one more room, its thread profiled (cProfile: slower; not counted)")
            row, run = room_run(students, prob, clients, "async", steps, lr, max_rate,
                                profile=True, log=log)
            out["profile"] = {"pushes_per_s": row["pushes_per_s"], "top": row["profile"]}
    out["seconds"] = time.perf_counter() - start
    out["summary"] = summary(out)
    if keep_runs:
        out["runs_kept"] = kept
    return out


def _median(values):
    values = [v for v in values if v is not None]
    return statistics.median(values) if values else None


def summary(result):
    """Per policy: the median pushes/s with 1 student and with all, the median of the rounds'
    ratios (all / 1) and their range, that ratio per student, staleness, the lost, the room
    thread's load (in the rooms of all students)."""
    out, n = {}, result["clients"]
    for policy in dict.fromkeys(row["policy"] for row in result["rows"]):
        rows = [row for row in result["rows"] if row["policy"] == policy]
        one = {row["round"]: row for row in rows if row["clients"] == 1}
        many = {row["round"]: row for row in rows if row["clients"] == n}
        ratios = [many[r]["pushes_per_s"] / one[r]["pushes_per_s"] for r in many if r in one]
        out[policy] = {
            "one": statistics.median(row["pushes_per_s"] for row in one.values()),
            "many": statistics.median(row["pushes_per_s"] for row in many.values()),
            "ratio": statistics.median(ratios), "ratio_range": [min(ratios), max(ratios)],
            "per_student": statistics.median(ratios) / n,
            "mean_staleness": statistics.median(row["mean_staleness"] for row in many.values()),
            "max_staleness": max(row["max_staleness"] for row in many.values()),
            "lost": sum(row["lost"] for row in rows),
            "violations": sum(len(row["violations"]) for row in rows),
            "errors": sum(len(row["errors"]) for row in rows),
            "every_student_pushed": all(row["every_student_pushed"] for row in rows),
            "room_thread_busy_one": _median(row["room_thread_busy"] for row in one.values()),
            "room_thread_busy": _median(row["room_thread_busy"] for row in many.values()),
            "room_process_cores": statistics.median(row["room_process_cores"] for row in many.values()),
            "students_cores": statistics.median(row["students_cores"] for row in many.values()),
            **{f"{what}_us_per_push{suffix}": _median(row[f"{what}_us_per_push"] for row in rows.values())
               for what in ("room_thread", "room_process", "students")
               for suffix, rows in (("_one", one), ("", many))}}
    return out


def us(value):
    return "—" if value is None else f"{value:,.0f}"


def table(result):
    """The table of a result: per policy, 1 student against all of them, side by side."""
    n = result["clients"]
    lines = [f"| policy | 1 student | {n} students | {n} / 1 (range) | per student | staleness mean "
             f"/ max | lost | room thread busy (1 / {n}) | CPU µs a push, {n} students: room thread / "
             f"room process / students | cores used: room process / students |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for policy, p in result["summary"].items():
        lo, hi = p["ratio_range"]
        busy = " / ".join("—" if b is None else f"{b:.2f}"
                          for b in (p["room_thread_busy_one"], p["room_thread_busy"]))
        lines.append(f"| {policy} | {p['one']:,.0f} pushes/s | {p['many']:,.0f} pushes/s | "
                     f"{p['ratio']:.2f} ({lo:.2f}–{hi:.2f}) | {p['per_student']:.3f} | "
                     f"{p['mean_staleness']:.1f} / {p['max_staleness']} | {p['lost']} | {busy} | "
                     f"{us(p['room_thread_us_per_push'])} / {us(p['room_process_us_per_push'])} / "
                     f"{us(p['students_us_per_push'])} | {p['room_process_cores']:.2f} / "
                     f"{p['students_cores']:.2f} |")
    return lines


def limits(result, policy="async"):
    """What limits the room of all students, in words, from the CPU each push cost: the machine's
    cores (every process's CPU a push against the cores) or the room's thread (busy all the time),
    and the room thread's own ceiling on a core of its own."""
    p, n, cores = result["summary"].get(policy), result["clients"], result["cores"]
    if not p or None in (p["room_thread_us_per_push"], p["room_process_us_per_push"],
                         p["students_us_per_push"], p["room_thread_busy"]):
        return ""
    total = p["room_process_us_per_push"] + p["students_us_per_push"]
    machine = cores / total * 1e6
    room = 1e6 / p["room_thread_us_per_push"]
    which = ("the room's thread, busy all the time" if p["room_thread_busy"] > 0.9 else
             f"the machine's {cores} cores, shared by {n + 1} processes, not the room's thread "
             f"(busy {p['room_thread_busy']:.0%} of the time)")
    return (f"What limits the room ({policy}, {n} students): each push cost {total:,.0f} µs of CPU in "
            f"all (room process {p['room_process_us_per_push']:,.0f}, students "
            f"{p['students_us_per_push']:,.0f}), so {cores} cores allow at most {machine:,.0f} pushes/s; "
            f"{p['many']:,.0f} were made ({p['many'] / machine:.0%}): {which}. The room thread's own "
            f"{p['room_thread_us_per_push']:,.0f} µs a push put its ceiling at about {round(room, -2):,.0f} "
            f"pushes/s on a core of its own, {round(room / n):,} a second for each of {n} students on "
            f"machines of their own.")


def report(result):
    """The result as a small table and a few lines."""
    n, s = result["clients"], result["summary"]
    lines = [f"classroom: {result['problem']}, {n} students (processes), about {result['steps']:,} "
             f"pushes a room, {result['rounds']} round(s) in turns; {result['machine']}", "",
             *table(result)]
    v = result.get("view")
    if v:
        lines += ["", f"lecturer's view on the trace of {v['students']} students ({v['pushes_in_trace']:,} "
                      f"pushes): room.state {v['room_state_ms']:.1f} ms + one frame {v['frame_ms']:.1f} ms "
                      f"(live.state {v['live_state_ms']:.2f} ms of it): {v['share_of_core']:.0%} of one "
                      f"core at {v['fps']} fps"]
    if limits(result):
        lines += ["", limits(result)]
    bad = {p: (s[p]["lost"], s[p]["violations"], s[p]["errors"]) for p in s if any(
        (s[p]["lost"], s[p]["violations"], s[p]["errors"], not s[p]["every_student_pushed"]))}
    lines.append("every room: no student lost, no invariant broken, every student pushed" if not bad
                 else f"NOT sustained: (lost, violations, errors) per policy {bad}")
    if result.get("profile"):
        lines += ["", f"the room thread, profiled ({result['profile']['pushes_per_s']:,.0f} pushes/s under "
                      f"cProfile), share of its own time:"]
        lines += [f"  {t['share']:6.1%} {t['calls']:>8,}  {t['function']}" for t in result["profile"]["top"]]
    return "\n".join(lines)


# -- docs/benchmarks ----------------------------------------------------------------------------
HEADING = "## A classroom of students (issue 29)"


def limit(max_rate):
    return "no rate limit" if max_rate >= MAX_RATE else f"max_rate {max_rate:g} messages/s"


def markdown(tables, soak_lines=()):
    """The README section: one table per machine, then `soak_lines` (soak.markdown: the soaks,
    one per machine; nothing when there is neither)."""
    soak_lines = list(soak_lines)
    if not tables and not soak_lines:
        return []
    lines = ["", HEADING, "",
             "A room (`aps.classroom.serve`, one ZeroMQ ROUTER socket served by one thread) in one "
             "process, each student a process of its own (multiprocessing, spawn) calling "
             "`aps.classroom.join`, on the loopback. Each room waits for its class and starts "
             "(`room.start()`) once every seat is taken; in turns, a room of 1 student and a room "
             "of all of them, per policy, each making about the same number of pushes (sync: that many / students rounds). "
             "room thread busy: its CPU seconds per second of the run (1.00: saturated). The view: "
             "`room.state` plus one frame of the live view (`render_live.live_svg`, as the LiveView "
             "draws it) on the trace of the largest async room, at 10 refreshes a second "
             "(`python -m asyncps.bench.classroom`).", ""]
    for name, t in tables.items():
        lines += [f"**{name}** ({t['date']}): {t['problem']}, {t['clients']} students, "
                  f"{t['steps']:,} pushes a room, {t['rounds']} rounds, lr {t['lr']:g}, {limit(t['max_rate'])}",
                  "", *table(t)]
        v = t.get("view")
        if v:
            lines += ["", f"The lecturer's view on {v['students']} students' trace ({v['pushes_in_trace']:,} "
                          f"pushes): `room.state` {v['room_state_ms']:.1f} ms, one frame "
                          f"{v['frame_ms']:.1f} ms: **{v['share_of_core']:.0%} of one core at "
                          f"{v['fps']} fps**."]
        if limits(t):
            lines += ["", limits(t)]
        if t.get("profile"):
            top = ", ".join(f"{x['function']} {x['share']:.0%}" for x in t["profile"]["top"][:6])
            lines += ["", f"Where the room thread's time goes (cProfile, own time): {top}."]
        if t.get("note"):
            lines += ["", t["note"]]
        lines.append("")
    return lines + soak_lines


def kept(path):
    """Every machine's table already in the results.json at `path` ({} without one)."""
    return json.loads(path.read_text()).get("classroom", {}) if path.exists() else {}


def write(result, out):
    """This machine's table into out/results.json (others kept) and the section into
    out/README.md, in place of an earlier one, before the plots (or at the end)."""
    path = out / "results.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    stored = {k: v for k, v in result.items() if k != "runs_kept"}
    results["classroom"] = {**kept(path), result["machine"]: stored}
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1, default=str))
    rewrite_section(out, results)


def rewrite_section(out, results, soak_lines=None):
    """The classroom section of out/README.md (the tables of `results`, then `soak_lines`: None
    keeps the soak subsection the README has), in place of an earlier one, before the plots (or
    at the end)."""
    readme = out / "README.md"
    lines = readme.read_text().split("\n") if readme.exists() else ["# Benchmarks", ""]
    kept_soak = []
    if HEADING in lines:                                  # drop the earlier section
        at = lines.index(HEADING)
        end = next((i for i in range(at + 1, len(lines))
                    if lines[i].startswith(("## ", "![throughput]"))), len(lines))
        soak_at = next((i for i in range(at + 1, end) if lines[i].startswith("### Soak")), end)
        kept_soak = lines[soak_at:end]
        lines[at - 1 if at and not lines[at - 1] else at:end] = []
    section = markdown(results.get("classroom", {}), kept_soak if soak_lines is None else soak_lines)
    while section and not section[-1]:
        section.pop()
    at = next((i for i, line in enumerate(lines) if line.startswith("![throughput]")), None)
    if at is None:
        lines += section
    else:
        while at and not lines[at - 1]:
            at -= 1
        lines[at:at] = section + [""]                 # a paragraph of its own before the plots
    readme.write_text("\n".join(lines))


def main(argv=None):
    argv = sys.argv[1:] if argv is None else list(argv)
    if "--soak" in argv:                                  # the room under attack: soak.py
        sys.exit("the soak: python -m asyncps.bench classroom --soak (or python -m asyncps.bench.soak)")
    parser = argparse.ArgumentParser(prog="python -m asyncps.bench.classroom",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--clients", type=int, default=CLIENTS, help="student processes")
    parser.add_argument("--steps", type=int, default=STEPS, help="about how many pushes a room makes")
    parser.add_argument("--problem", choices=sorted(PROBLEMS), default="lsq")
    parser.add_argument("--rounds", type=int, default=ROUNDS, help="rooms of 1 and of all, in turns")
    parser.add_argument("--policies", default="async,sync")
    parser.add_argument("--lr", type=float, default=None)
    parser.add_argument("--max-rate", type=float, default=MAX_RATE,
                        help="the room's per-student limit, messages a second (the room's default: 2000)")
    parser.add_argument("--profile", action="store_true",
                        help="one more room, its thread under cProfile: where its time goes")
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks"),
                        help="where results.json and README.md are")
    parser.add_argument("--no-save", action="store_true", help="print only")
    parser.add_argument("--soak", action="store_true", help="the room under attack instead: 30 students "
                        "and 5 attackers, with and without (asyncps/bench/soak.py; --seconds, --students)")
    args = parser.parse_args(argv)
    result = measure(args.clients, args.steps, args.problem, tuple(args.policies.split(",")),
                     args.rounds, args.lr, args.max_rate, args.profile)
    print()
    print(report(result))
    if not args.no_save:
        write(result, args.out)
        print(f"\nadded this machine's table to {args.out / 'results.json'} and {args.out / 'README.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
