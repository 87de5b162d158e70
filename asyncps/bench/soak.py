"""python -m asyncps.bench classroom --soak [--seconds 120] [--students 30]: the room under attack.

Issue 37: "30 honest student processes and 5 attackers for 2 minutes on this machine: honest
pushes/s >= 80 % of the same run without attackers, the lecturer's process alive, the room's
memory within +50 MB, `aps.violations` empty, every applied push from a seated student".

Runs in turn in one invocation, the same in all but the attack (RUNS): without attackers; with
the five, all from 127.0.0.1, the address every student here has (the door's handshake budget is
per address: they share it with the class); with each from an address of its own (127.0.0.11 to
.15, as laptops on a network); then the CPU control (as much CPU burnt as the last attackers
used, by processes that touch no network); and with --each, each attacker alone. Each run:
- the lecturer: a process of its own (multiprocessing, spawn) that opens one encrypted async
  room (LeastSquares(n=4096, dim=32), lr 0.01, as in docs/classroom.md; `students` + 1 seats, the
  last one free for a late student; `steps` far more than the run makes) and answers the
  benchmark's questions through a pipe;
- the class: `students` processes (classroom.Students, started once for every run), seated
  (classroom.seat_class) and each heard on its own key's connection, then `room.start()`;
  after `seconds`, `room.stop()`;
- the attackers (with attackers only): five processes running attackers.py by its path in
  isolated mode (raw pyzmq and raw TCP, no asyncps code), started a second before the run.

Measured: the honest students' pushes a second (from the run's first pull to the stop), and their
ratio with / without attackers; whether the lecturer's process is alive; its memory (RSS) from
the class seated to the run stopped, read every 0.1 s by a thread of the lecturer's and every 0.5 s
from outside; `aps.violations` of the run's trace; every applied push from a seat whose student
joined (trace.meta["students"]), and none from the rule breaker; room.refused by reason,
room.errors; the CPU the room, the students and the attackers used (cores).

Results go into docs/benchmarks/results.json under "classroom_soak" (per machine) and into the
classroom section of docs/benchmarks/README.md.
"""
import json
import multiprocessing
import os
import subprocess
import sys
import time
from pathlib import Path

from . import classroom

SECONDS, STUDENTS = 120.0, 30
STEPS = 10 ** 9          # more versions than a run makes in its seconds: the run is stopped
LEAD = 1.0               # seconds the attackers have to get going before room.start()
SAMPLE = 0.5             # seconds between two looks at the lecturer's memory and connections
TARGET_RATIO, TARGET_MB = 0.8, 50.0
ATTACKERS = {            # kind (attackers.py): what it does, in words
    "handshakes": "a stranger flooding CurveZMQ handshakes, each with a fresh random key pair "
                  "(batches of 40 sockets, each closed after 50 ms)",
    "idle": "a stranger holding 600 idle raw TCP connections (the room caps 512), opening a new one "
            "for each the room closes",
    "garbage": "a stranger sending random bytes and broken ZMTP greetings (CURVE with a noise HELLO, "
               "NULL, a 2^62-byte frame announced, a signature cut short) on raw TCP, connection "
               "after connection",
    "forged_ids": "a stranger setting forged routing ids, b\"\\x00\" + uint32 from 0x6b8b4567 up, "
                  "over CurveZMQ with random keys and over NULL, in batches of 40",
    "rule_breaker": "a token holder who joins properly (door key from the token's secret, a seat for "
                    "its own key, then 3 connections of that key) and, reading no reply, floods gates "
                    "over its rate, pushes without pulls, pushes gradients of norm 1e300 and ~6e6 "
                    "after pulls, replays old seq numbers",
}


# -- the lecturer: the room in a process of its own ------------------------------------------------
def _lecturer(pipe, workers, problem_name, lr):
    """Open the room, tell its address; then answer "seated", "connected", "watch", "start",
    "poll", "stop"."""
    import resource

    from ..classroom import serve

    try:
        make, _, default_lr = classroom.PROBLEMS[problem_name]
        problem = make()
        room = serve(problem, workers=workers, policy="async", lr=default_lr if lr is None else lr,
                     steps=STEPS)
        memory = _Peak()
        pipe.send({"address": room.address, "token": room.token, "room_key": room.door.public_key.decode(),
                   "fingerprint": room.fingerprint, "port": room.door.port})
        while True:
            what = pipe.recv()
            if what == "seated":
                pipe.send(len(room.seats) if room.live.running else None)
            elif what == "connected":                 # seated, and heard on their own key's connection
                pipe.send(sum(1 for seat in list(room.seats.values()) if seat.get("who") is not None))
            elif what == "watch":                     # its memory, from now on
                memory.start()
                pipe.send(memory.peak)
            elif what == "start":
                room.start()
                pipe.send(True)
            elif what == "poll":
                pipe.send({"connections": room.door.connections, "seats": len(room.seats),
                           "version": room.server.version, "running": room.live.running,
                           "maxrss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024})
            elif what == "stop":
                stopped_at = room._clock()
                room.stop()
                run = room.result(classroom.JOB)
                peak = memory.stop()                  # before the summary's own allocations
                out = _summary(room, run, stopped_at)
                out.update(own_peak_mb=peak, maxrss_mb=resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
                pipe.send(out)
                return
    except (KeyboardInterrupt, EOFError, BrokenPipeError):
        return
    finally:
        pipe.close()


class _Peak:
    """The process's own RSS, read every 0.1 s by a thread from start() to stop(): its peak in MB
    (getrusage's ru_maxrss is the peak of the process's whole life, its start-up included)."""

    def __init__(self):
        import threading

        self.peak, self._done = 0.0, threading.Event()
        self._thread = threading.Thread(target=self._watch, name="asyncps-soak-memory", daemon=True)

    @staticmethod
    def rss_mb():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * os.sysconf("SC_PAGE_SIZE") / 2 ** 20

    def _watch(self):
        while not self._done.wait(0.1):
            self.peak = max(self.peak, self.rss_mb())

    def start(self):
        self.peak = self.rss_mb()
        self._thread.start()

    def stop(self):
        self._done.set()
        self._thread.join()
        return max(self.peak, self.rss_mb())


def _summary(room, run, stopped_at):
    """What the run says about the attack: the honest students' pushes, from whom every applied
    push came, the invariants, the refusals and the contained errors."""
    from ..core.invariants import violations

    trace = run.trace
    students = dict(trace.meta["students"])                 # seat (as text) -> name, all who joined
    honest = {int(k) for k, name in students.items() if name.startswith("student-")}
    pushes, pulls = trace.pushes, trace.pulls
    first = pulls[0].time if pulls else 0.0
    window = stopped_at - first
    by_worker = {}
    for p in pushes:
        by_worker[p.worker] = by_worker.get(p.worker, 0) + 1
    for worker, count in trace.beyond.get("pushes", {}).items():     # past a trace_limit (none here)
        by_worker[int(worker)] = by_worker.get(int(worker), 0) + count
    honest_pushes = sum(c for w, c in by_worker.items() if w in honest)
    bins = [0] * (int(window // 10) + 1)
    for p in pushes:
        if p.worker in honest and p.time >= first:
            bins[min(len(bins) - 1, int((p.time - first) // 10))] += 1
    found = violations(trace)
    return {"honest_pushes": honest_pushes, "seconds": window, "first_pull": first,
            "honest_pushes_per_s": honest_pushes / window if window > 0 else 0.0,
            "honest_pushes_per_10s": bins, "pushes": sum(by_worker.values()),
            "versions": len(run.losses) - 1, "students": students,
            "honest_seats": len(honest), "honest_seats_pushed": sum(1 for w in honest if by_worker.get(w)),
            "pushes_by_others": {**{name: 0 for k, name in students.items() if int(k) not in honest},
                                 **{students.get(str(w), f"seat {w} (nobody)"): c
                                    for w, c in by_worker.items() if w not in honest}},
            "unseated_pushes": sum(c for w, c in by_worker.items() if str(w) not in students),
            "violations": len(found), "violations_first": [str(v) for v in found[:5]],
            "lost": [{"worker": e.worker, "name": students.get(str(e.worker)), "why": getattr(e, "reason", "")}
                     for e in trace.lost],
            "honest_lost": sum(1 for e in trace.lost if e.worker in honest),
            "refused": dict(room.refused), "errors": dict(room.errors),
            "connections_at_end": room.door.connections, "message": run.message,
            "diverged": bool(run.diverged), "loss_first": run.losses[0], "loss_last": run.losses[-1]}


class Lecturer:
    """The lecturer's process (see _lecturer): `info` (address, token, ...), `ask(what)`."""

    def __init__(self, workers, problem_name="lsq", lr=None):
        context = multiprocessing.get_context("spawn")
        self.pipe, theirs = context.Pipe()
        self.process = context.Process(target=_lecturer, args=(theirs, workers, problem_name, lr),
                                       name="asyncps-lecturer", daemon=True)
        self.process.start()
        theirs.close()
        if not self.pipe.poll(classroom.SEATED):
            self.close()
            raise RuntimeError(f"the lecturer's process did not open its room within {classroom.SEATED:g} s")
        self.info = self.pipe.recv()

    def ask(self, what, timeout=classroom.JOB):
        """The lecturer's answer; None when its process is gone (or did not answer in time)."""
        try:
            self.pipe.send(what)
            return self.pipe.recv() if self.pipe.poll(timeout) else None
        except (EOFError, OSError):
            return None

    @property
    def alive(self):
        return self.process.is_alive()

    def close(self):
        self.process.join(10.0)
        if self.process.is_alive():
            self.process.terminate()
            self.process.join(5.0)
        if self.process.is_alive():
            self.process.kill()
            self.process.join(5.0)
        self.exitcode = self.process.exitcode
        self.pipe.close()


# -- the attackers: attackers.py, by its path --------------------------------------------------
def start_attackers(info, seconds, kinds=tuple(ATTACKERS), own_addresses=False):
    """One process per kind, running attackers.py in isolated mode (no asyncps on its path);
    `own_addresses`: each connects from an address of its own, 127.0.0.11 on (the students all
    come from 127.0.0.1)."""
    script = Path(__file__).with_name("attackers.py")
    given = {"host": "127.0.0.1", "port": info["port"], "room_key": info["room_key"],
             "seconds": seconds}
    out = {}
    for kind in kinds:
        a = dict(given, source=f"127.0.0.{11 + list(ATTACKERS).index(kind)}" if own_addresses else None)
        if kind == "rule_breaker":                    # the token holder, who built the problem too
            a.update(token=info["token"], fingerprint=info["fingerprint"])
        out[kind] = subprocess.Popen([sys.executable, "-I", str(script), kind, json.dumps(a)],
                                     stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    return out


BURN = """import sys, time
duty, end = float(sys.argv[1]), time.monotonic() + float(sys.argv[2])
while time.monotonic() < end:
    t = time.monotonic() + 0.01 * duty
    while time.monotonic() < t:
        pass
    time.sleep(0.01 * (1 - duty))
"""


def start_burners(cores, seconds, n=len(ATTACKERS)):
    """`n` processes that burn `cores` of CPU among them (each busy a share of every 10 ms), and
    touch no network: the CPU control, as much CPU as the attackers took, without an attack."""
    duty = min(1.0, max(0.0, cores / n))
    return {f"burner {i + 1}": subprocess.Popen([sys.executable, "-I", "-c", BURN, str(duty), str(seconds)],
                                                stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
            for i in range(n)}


def _busy():
    """CPU seconds the whole machine has been busy (every process, the kernel's too)."""
    import psutil

    t = psutil.cpu_times()
    return sum(t) - t.idle - getattr(t, "iowait", 0.0)


def _label(row):
    if row.get("burn_asked"):
        return f"CPU control, {row['burn_asked']:.2f} cores burnt"
    if not row["attack"]:
        return "without attackers"
    who = ("each from an address of its own" if row["own_addresses"] else "from the students' address")
    return f"with {len(row['attack'])} attacker(s), {who}"


def _cpu_of(pid):
    import psutil

    try:
        t = psutil.Process(pid).cpu_times()
        return t.user + t.system + t.children_user + t.children_system
    except psutil.Error:
        return None


def finish_attackers(attackers, timeout=15.0):
    """Each attacker's report (its JSON line, or what went wrong); stopped by PID if it overran."""
    out, deadline = {}, time.monotonic() + timeout
    for kind, p in attackers.items():
        try:
            stdout, stderr = p.communicate(timeout=max(0.1, deadline - time.monotonic()))
        except subprocess.TimeoutExpired:
            p.terminate()
            try:
                stdout, stderr = p.communicate(timeout=5.0)
            except subprocess.TimeoutExpired:
                p.kill()
                stdout, stderr = p.communicate()
        lines = [line for line in (stdout or "").splitlines() if line.startswith("{")]
        report = json.loads(lines[-1]) if lines else {}
        report["exitcode"] = p.returncode
        if p.returncode:
            report["stderr"] = stderr[-2000:]
        out[kind] = report
    return out


# -- one run -------------------------------------------------------------------------------------
def soak_run(students, n, seconds, attack=(), own_addresses=False, problem="lsq", lr=None,
             log=print, burn=None):
    """One room of `n` honest students (the first `n` of `students`) for `seconds`, with the
    attackers of `attack` (kinds of ATTACKERS; none: the run without attackers), from the
    students' address or (`own_addresses`) each from one of its own; or with `burn` cores
    burnt by processes that touch no network (the CPU control); a dict of what was measured."""
    import psutil

    lecturer = Lecturer(n + 1, problem, lr)
    info, ks, attackers = lecturer.info, list(range(n)), {}
    me = psutil.Process(lecturer.process.pid)
    row = {"attack": list(attack), "own_addresses": bool(attack) and own_addresses, "students": n,
           "seconds_asked": seconds, "samples": 0, "most_connections": 0}
    try:
        classroom.seat_class(students, ks, info["address"], info["token"],
                             lambda: lecturer.ask("seated", 30.0))
        deadline = time.monotonic() + classroom.SEATED      # and on their own key's connection:
        while (lecturer.ask("connected", 30.0) or 0) < n:   # the attack meets a class in its seats
            if time.monotonic() > deadline:
                raise RuntimeError(f"the students' own connections were not all up within "
                                   f"{classroom.SEATED:g} s")
            time.sleep(0.05)
        rss = row["rss_start_mb"] = me.memory_info().rss / 2 ** 20
        peak, row["maxrss_at_start_mb"] = rss, lecturer.ask("poll", 10.0)["maxrss_mb"]
        lecturer.ask("watch", 10.0)                   # its own thread reads its RSS from now on
        if attack:
            attackers = start_attackers(info, seconds + LEAD + 2.0, attack, own_addresses)
        elif burn:
            attackers = start_burners(burn, seconds + LEAD + 2.0)
            row["burn_asked"] = burn
        time.sleep(LEAD)                              # the same pause without attackers
        cpu = (_cpu_of(me.pid), students.cpu(ks), {k: _cpu_of(p.pid) or 0.0 for k, p in attackers.items()})
        attackers_cpu = dict(cpu[2])
        machine, bench = _busy(), _cpu_of(os.getpid())
        started = time.perf_counter()
        if lecturer.ask("start", 30.0) is None:
            raise RuntimeError("the lecturer's process did not start its room")
        log(f"    {_label(row)}: started, {seconds:g} s ...")
        while (elapsed := time.perf_counter() - started) < seconds:
            time.sleep(min(SAMPLE, seconds - elapsed))
            try:
                peak = max(peak, me.memory_info().rss / 2 ** 20)
            except psutil.Error:
                break
            for kind, p in attackers.items():         # read before they exit
                used = _cpu_of(p.pid)
                if used is not None:
                    attackers_cpu[kind] = used
            poll = lecturer.ask("poll", 10.0)
            if poll is None:
                break
            row["samples"] += 1
            row["most_connections"] = max(row["most_connections"], poll["connections"])
            if row["samples"] % int(5 / SAMPLE) == 0:         # every 5 s: (s, RSS MB, connections)
                row.setdefault("timeline", []).append(
                    (round(elapsed + SAMPLE, 1), round(me.memory_info().rss / 2 ** 20, 1),
                     poll["connections"], poll["version"]))
        wall = time.perf_counter() - started
        end = (_cpu_of(me.pid), students.cpu(ks))
        machine, bench = _busy() - machine, _cpu_of(os.getpid()) - bench
        try:
            peak = max(peak, me.memory_info().rss / 2 ** 20)
        except psutil.Error:
            pass
        summary = lecturer.ask("stop") if lecturer.alive else None
        row["lecturer_alive"] = summary is not None
        if summary is not None:
            row.update(summary)
            peak = max(peak, summary["own_peak_mb"])
        row.update(rss_peak_mb=peak, rss_growth_mb=peak - rss, wall_seconds=wall,
                   room_process_cores=None if None in (cpu[0], end[0]) else (end[0] - cpu[0]) / wall,
                   students_cores=(end[1] - cpu[1]) / wall,
                   attackers_cores=sum(attackers_cpu[k] - cpu[2][k] for k in attackers) / wall
                   if attackers else 0.0,
                   machine_cores_busy=machine / wall, bench_cores=bench / wall)
        ours = (row["room_process_cores"] or 0.0) + row["students_cores"] + row["attackers_cores"]
        row["other_cores"] = max(0.0, row["machine_cores_busy"] - ours - row["bench_cores"])
        contributions = students.collect(ks)
        row["student_errors"] = {c["name"]: c["error"] for c in contributions.values() if "error" in c}
        row["student_endings"] = sorted({c.get("stopped", "") for c in contributions.values()
                                         if "error" not in c})
    finally:
        if attackers:
            row["attackers"] = finish_attackers(attackers)
        lecturer.close()
        row["lecturer_exitcode"] = lecturer.exitcode
    log(f"    {_label(row)}: {row.get('honest_pushes_per_s', 0):,.0f} honest "
        f"pushes/s, lecturer {'alive' if row['lecturer_alive'] else 'DEAD'}, memory "
        f"{row['rss_growth_mb']:+.1f} MB, {row.get('violations')} violations, refused "
        f"{row.get('refused')}, errors {row.get('errors')}")
    return row


# -- the soak ------------------------------------------------------------------------------------
RUNS = (("without attackers", (), False),
        ("with attackers, from the students' address", tuple(ATTACKERS), False),
        ("with attackers, each from an address of its own", tuple(ATTACKERS), True))


def measure(students=STUDENTS, seconds=SECONDS, problem="lsq", lr=None, each=0.0, runs=RUNS,
            control=True, log=print):
    """The runs of `runs` in turn, the same room and the same student processes: without
    attackers, with the five from the students' own address (127.0.0.1, as every student here),
    with each from an address of its own (127.0.0.11 on, as laptops on a network). `each`
    seconds > 0: then each attacker alone, from an address of its own, and a run without, that
    long (which attacker costs what). `control`: last, a run with as much CPU burnt by processes
    that touch no network as the last run's attackers used (what the CPU they took costs the
    class on this machine, whatever they do with it)."""
    make, words, default_lr = classroom.PROBLEMS[problem]
    out = {"machine": classroom.machine(), "cores": os.cpu_count(), "date": time.strftime("%Y-%m-%d"),
           "problem": words, "lr": default_lr if lr is None else lr, "students": students,
           "seconds": seconds, "policy": "async", "encrypted": True, "attackers": ATTACKERS,
           "runs": []}
    start = time.perf_counter()
    log(f"  starting {students} student processes (spawn) ...")
    with classroom.Students(students, problem) as class_:
        for name, attack, own in runs:
            row = soak_run(class_, students, seconds, attack, own, problem, lr, log)
            out["runs"].append({"name": name, **row})
        if control and out["runs"][-1]["attack"]:
            cores = out["runs"][-1]["attackers_cores"]
            row = soak_run(class_, students, seconds, (), False, problem, lr, log, burn=cores)
            out["control"] = {"name": "CPU control: no attacker, as much CPU burnt", **row}
        if each > 0:
            out["each"] = {"seconds": each, "runs": []}
            for kind in (None, *ATTACKERS):
                row = soak_run(class_, students, each, (kind,) if kind else (), True, problem, lr, log)
                out["each"]["runs"].append({"name": kind or "none", **row})
    out["total_seconds"] = time.perf_counter() - start
    out["verdict"] = [verdict(out["runs"][0], row) for row in out["runs"][1:]]
    return out


def control_line(result):
    """The CPU control in a sentence: honest pushes/s with that CPU gone and no attack."""
    c = result.get("control")
    if not c:
        return []
    without, attacked = result["runs"][0], result["runs"][-1]
    return [f"CPU control: five processes that touch no network, asked to burn the "
            f"{c['burn_asked']:.2f} cores the attackers used in the last run, burnt "
            f"{c['attackers_cores']:.2f}: honest pushes/s {_num(c.get('honest_pushes_per_s'))}, "
            f"**{_num(ratio(without, c), '{:.2f}')}** of the run without attackers (the attack: "
            f"{_num(ratio(without, attacked), '{:.2f}')}); cores: room process / students / burners / "
            f"others {_cores(c)}."]


def ratio(without, row):
    base = without.get("honest_pushes_per_s")
    return row.get("honest_pushes_per_s", 0.0) / base if base else None


def verdict(without, row):
    """Each target of the soak for one run with attackers: {target: met}, and the ratio."""
    r = ratio(without, row)
    return {"run": row["name"], "ratio": r, "met": {
        "ratio": r is not None and r >= TARGET_RATIO,
        "alive": bool(row["lecturer_alive"]),
        "memory": row["rss_growth_mb"] <= TARGET_MB,
        "violations": row.get("violations") == 0,
        "seated": row.get("unseated_pushes") == 0}}


TARGETS = {"ratio": f"honest pushes/s with / without attackers >= {TARGET_RATIO:g}",
           "alive": "the lecturer's process alive",
           "memory": f"the room's memory within +{TARGET_MB:g} MB",
           "violations": "aps.violations(run.trace) empty",
           "seated": "every applied push from a seated student"}


def _reasons(counter):
    return ", ".join(f"{k} {v:,}" for k, v in sorted((counter or {}).items(), key=lambda kv: -kv[1])) or "none"


def _num(value, fmt="{:,.0f}"):
    return "—" if value is None else fmt.format(value)


def table(result):
    """Side by side: the run without attackers and each run with them; the targets met."""
    runs, verdicts = result["runs"], {v["run"]: v for v in result["verdict"]}
    without = runs[0]

    def met(row, what):
        v = verdicts.get(row["name"])
        return "" if v is None else (" ✓" if v["met"][what] else " **✗**")

    def line(label, cell):
        return f"| {label} | " + " | ".join(cell(row) for row in runs) + " |"

    return [
        "| | " + " | ".join(row["name"] for row in runs) + " |",
        "|---|" + "---|" * len(runs),
        line(f"honest pushes/s ({result['students']} students)",
             lambda row: f"{_num(row.get('honest_pushes_per_s'))}" + (
                 "" if row is without else f" (**{_num(ratio(without, row), '{:.2f}')}** of without)"
                 f"{met(row, 'ratio')}")),
        line("the lecturer's process", lambda row: ("alive" if row["lecturer_alive"] else
                                                    f"**dead** (exit code {row['lecturer_exitcode']})")
             + met(row, "alive")),
        line("the room's memory: RSS at start → peak",
             lambda row: f"{row['rss_start_mb']:.0f} → {row['rss_peak_mb']:.0f} MB "
                         f"(**{row['rss_growth_mb']:+.1f} MB**){met(row, 'memory')}"),
        line("memory growth per 1,000 pushes applied (a trace alone keeps ~0.66 MB per 1,000 "
             "versions of this problem: its events and losses)", lambda row: _num(row["rss_growth_mb"] / row["pushes"] * 1000
                                                      if row.get("pushes") else None, "{:.2f}")),
        line("memory beyond what its pushes cost in the run without attackers (the attack's share)",
             lambda row: "" if row is without else _num(_beyond(without, row), "{:+.1f} MB")),
        line("`aps.violations(run.trace)`", lambda row: _num(row.get("violations"), "{}") + met(row, "violations")),
        line("pushes applied: all / from a seat nobody joined / from the rule breaker",
             lambda row: f"{_num(row.get('pushes'), '{:,}')} / {_num(row.get('unseated_pushes'), '{}')} / "
                         f"{row.get('pushes_by_others', {}).get('mallory', '—') if row['attack'] else '—'}"
                         + met(row, "seated")),
        line("honest students: seats that pushed / lost / errors",
             lambda row: f"{row.get('honest_seats_pushed', '—')} / {row.get('honest_lost', '—')} / "
                         f"{len(row.get('student_errors', {}))}"),
        line("`room.refused` by reason", lambda row: _reasons(row.get("refused"))),
        line("`room.errors` (contained exceptions)", lambda row: _reasons(row.get("errors"))),
        line("most connections open (sampled)", lambda row: f"{row['most_connections']}"),
        line("cores used: room process / students / attackers / others on the machine", _cores),
    ]


def _beyond(without, row):
    """The memory a run grew beyond its own pushes, at the MB a push of the run without attackers."""
    if not without.get("pushes") or row.get("pushes") is None:
        return None
    return row["rss_growth_mb"] - row["pushes"] * without["rss_growth_mb"] / without["pushes"]


def _cores(row):
    room = "—" if row.get("room_process_cores") is None else f"{row['room_process_cores']:.2f}"
    return (f"{room} / {row['students_cores']:.2f} / {row['attackers_cores']:.2f} / "
            f"{row.get('other_cores', 0.0):.2f}")


def each_table(result):
    """Each attacker alone (from an address of its own): the honest pushes/s against the run
    without, the refusals."""
    each = result.get("each")
    if not each:
        return []
    base = each["runs"][0]
    lines = [f"Each attacker alone ({each['seconds']:g} s a run, from an address of its own, the same "
             f"{result['students']} students):", "",
             "| attacker | honest pushes/s | of without | room memory | `room.refused` | cores: room / "
             "students / attacker / others | the attacker did |", "|---|---|---|---|---|---|---|"]
    for row in each["runs"]:
        r = ratio(base, row)
        did = _did(row.get("attackers", {}).get(row["name"], {})) if row is not base else ""
        lines.append(f"| {row['name']} | {_num(row.get('honest_pushes_per_s'))} | "
                     f"{'' if row is base else _num(r, '{:.2f}')} | {row['rss_growth_mb']:+.1f} MB | "
                     f"{_reasons(row.get('refused'))} | {_cores(row)} | {did} |")
    return lines


def _did(r):
    """An attacker's counts (its JSON line), in words."""
    counts = ", ".join(f"{k.replace('_', ' ')} {v:,}" if isinstance(v, int) and not isinstance(v, bool)
                       else f"{k.replace('_', ' ')} {v}" for k, v in r.items()
                       if k not in ("kind", "seconds", "exitcode", "stderr", "name", "worker"))
    if r.get("exitcode"):
        counts += f"; exit code {r['exitcode']}: {r.get('stderr', '')[-200:]!r}"
    return counts


def attacks(result):
    """What each attacker did in the runs with attackers, in words and counts."""
    lines = []
    for kind, words in result["attackers"].items():
        did = []
        for row in result["runs"][1:]:
            counts = _did(row.get("attackers", {}).get(kind, {}))
            did.append(f"{row['name'].removeprefix('with attackers, ')}: {counts or 'nothing reported'}")
        lines.append(f"- **{kind}**: {words}. Did ({'; '.join(did)}).")
    return lines


def verdict_lines(result):
    out = []
    for v in result["verdict"]:
        missed = [TARGETS[k] for k, ok in v["met"].items() if not ok]
        out.append(f"- Verdict, {v['run']}: " + ("every target met." if not missed else
                                               "missed: " + "; ".join(missed) + "; met the others."))
    return out


def report(result):
    lines = [f"classroom soak: {result['problem']}, one encrypted {result['policy']} room, "
             f"{result['students']} honest students (processes), {result['seconds']:g} s a run; "
             f"{result['machine']}", "", *table(result), "", *attacks(result), "",
             *verdict_lines(result), *control_line(result)]
    if result.get("each"):
        lines += ["", *each_table(result)]
    for run in result["runs"]:
        if run.get("student_errors"):
            lines.append(f"students' errors ({run['name']}): {run['student_errors']}")
        if run.get("lost"):
            lines.append(f"lost ({run['name']}): {run['lost']}")
    return "\n".join(lines)


# -- docs/benchmarks -----------------------------------------------------------------------------
HEADING = "### Soak: 30 students and 5 attackers (issue 37)"


def markdown(soaks):
    """The soak's subsection of the classroom section: one table per machine."""
    if not soaks:
        return []
    lines = [HEADING, "",
             "One encrypted async room (`aps.classroom.serve`, in a lecturer's process of its own), "
             "each honest student a process calling `aps.classroom.join`, and five attackers, each a "
             "process of raw pyzmq and raw TCP (asyncps/bench/attackers.py, run by its path: no "
             "asyncps code on their side), all on this machine's loopback. Runs in turn in one "
             "invocation, the same but for the attack: without attackers; with them connecting from "
             "127.0.0.1, the address every student here has (so the door's per-address handshake "
             "budget is shared with the class); with each connecting from an address of its own "
             "(127.0.0.11 to .15, as laptops on a network). Each run is stopped (`room.stop()`) "
             "after its seconds. Honest pushes/s: the honest students' pushes from the run's first "
             "pull to the stop. Memory: the lecturer's process's RSS, read every 0.1 s by a thread "
             "of its own and every 0.5 s from outside, from the class seated to the run stopped. "
             "Cores: CPU seconds a second of the run; others: the rest of the machine (other "
             "programs, the kernel) (`python -m asyncps.bench classroom --soak`).", ""]
    for name, r in soaks.items():
        lines += [f"**{name}** ({r['date']}): {r['problem']}, lr {r['lr']:g}, {r['students']} students "
                  f"(+1 free seat), {r['seconds']:g} s a run, the room's default limits", "",
                  *table(r), "", "The attackers:", "", *attacks(r), "", *verdict_lines(r)]
        if r.get("control"):
            lines += ["", *control_line(r)]
        if r.get("each"):
            lines += ["", *each_table(r)]
        if r.get("note"):
            lines += ["", r["note"]]
        lines.append("")
    return lines


def kept(path):
    """Every machine's soak already in the results.json at `path` ({} without one)."""
    return json.loads(path.read_text()).get("classroom_soak", {}) if path.exists() else {}


def write(result, out):
    """This machine's soak into out/results.json (others kept), and the classroom section of
    out/README.md rewritten with it."""
    path = out / "results.json"
    results = json.loads(path.read_text()) if path.exists() else {}
    results["classroom_soak"] = {**kept(path), result["machine"]: result}
    out.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(results, indent=1, default=str))
    classroom.rewrite_section(out, results, markdown(results["classroom_soak"]))


def main(argv=None):
    import argparse

    parser = argparse.ArgumentParser(prog="python -m asyncps.bench classroom --soak",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--soak", action="store_true", help="(the soak: this)")
    parser.add_argument("--students", type=int, default=STUDENTS, help="honest student processes")
    parser.add_argument("--seconds", type=float, default=SECONDS, help="seconds of each run")
    parser.add_argument("--problem", choices=sorted(classroom.PROBLEMS), default="lsq")
    parser.add_argument("--lr", type=float, default=None)
    parser.add_argument("--out", type=Path, default=Path("docs/benchmarks"),
                        help="where results.json and README.md are")
    parser.add_argument("--each", type=float, default=0.0,
                        help="then each attacker alone for this many seconds (0: not)")
    parser.add_argument("--no-control", action="store_true",
                        help="no CPU control run (as much CPU burnt as the attackers used, no attack)")
    parser.add_argument("--no-save", action="store_true", help="print only")
    args = parser.parse_args(argv)
    result = measure(args.students, args.seconds, args.problem, args.lr, args.each,
                     control=not args.no_control)
    print()
    print(report(result))
    if not args.no_save:
        write(result, args.out)
        print(f"\nadded this machine's soak to {args.out / 'results.json'} and {args.out / 'README.md'}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
