# %% [markdown]
# # 10 · The class is the cluster
#
# **Learning goals**
# - run a parameter server whose workers are the students' own Jupyter kernels, over the network;
# - see the lecture's words on real people: a slow Wi-Fi is a straggler, a closed laptop is a
#   lost worker, and staleness is how many other students pushed while you computed;
# - read the room's run like any other: its trace, its Timeline, its invariants.
#
# The lecturer runs the cells below; each student runs one line in their own notebook (printed
# below), and waits in the room — a progress line under their cell — until the lecturer starts
# the run. When nobody has joined — reading this alone, or when the notebook is built — stand-in
# students in this kernel take the empty seats, through the network like everyone else.
# The lecturer's guide, `docs/classroom.md`, has the network side: ports, firewalls, a JupyterHub,
# encryption, and what to do when the network is bad.

# %% [markdown] slide
# ## Open the room
# One parameter server, `workers` seats, the policy and lr of any run. The room listens on this
# machine only (127.0.0.1); in a classroom, `host="0.0.0.0"` and a port the students can reach.

# %%
import time

import numpy as np

import asyncps as aps

problem = aps.problems.LeastSquares(n=2048, dim=16, seed=0)
SEATS, STEPS = 4, 400
room = aps.classroom.serve(problem, workers=SEATS, policy="async", lr=0.05, steps=STEPS,
                           silent_after=10)
print(f"a room of {SEATS} seats, policy async, {STEPS} versions")

# %% tags=nbval-ignore-output
assert room.address.startswith("tcp://127.0.0.1:") and "~" in room.token   # encrypted (CurveZMQ)
print("students, in your notebook:")
print(f'  import asyncps as aps\n  problem = aps.problems.LeastSquares(n=2048, dim=16, seed=0)\n'
      f'  aps.classroom.join("{room.address}", token="{room.token}", name="YOUR NAME", '
      f'problem=problem)')

# %% [markdown] fragment
# **Predict, then run.** One of the stand-ins below is on a slow Wi-Fi: `SLOWDOWNS` gives each
# empty seat, in seat order, its extra seconds per gradient. Whose pushes will be the stalest,
# and by about how many versions?

# %% [markdown] slide
# ## Wait for the class, fill the empty seats, start
# The room waits: `WAIT` seconds for students to join (0 when this notebook is built); every seat
# still empty then gets a stand-in, and `fill` starts the run with `room.start()` once they are
# seated. Stand-in k sits in seat k: its lane is worker k's. With a real class, call `room.start()` yourself when everyone is in (or open the room
# with `start_with=N`); a student who comes later joins the running async run at its version.

# %% tags=nbval-ignore-output
WAIT = 0
SLOWDOWNS = [0.001, 0.001, 0.001, 0.006]               # seconds per gradient: the last is slow
deadline = time.monotonic() + WAIT
while time.monotonic() < deadline and len(room.seats) < SEATS:
    time.sleep(0.5)
empty = [k for k in range(SEATS) if k not in room.seats]
slow_seat = empty[int(np.argmax(SLOWDOWNS[:len(empty)]))] if empty else None
stand_ins = aps.classroom.fill(room, problem, slowdowns=SLOWDOWNS)           # then start()
assert stand_ins.errors == {} and room.started
room

# %%
run = room.result(timeout=120)
contributions = stand_ins.wait()
print(f"{len(run.trace.pushes)} pushes made {len(run.losses) - 1} versions; "
      f"violations: {aps.violations(run.trace)}; lost: {len(run.trace.lost)}")
print("students:", sorted(run.trace.meta["students"].values()))

# %% [markdown] slide
# ## Who was stale?
# Each student's pushes and the staleness of their gradients (a run on real clocks: the numbers
# change from run to run).

# %% tags=nbval-ignore-output
assert run.trace.meta["engine"] == "classroom" and aps.violations(run.trace) == []
for worker, name in sorted(run.trace.meta["students"].items(), key=lambda kv: int(kv[0])):
    stale = [p.staleness for p in run.trace.pushes if p.worker == int(worker)]
    assert stale, f"{name} pushed nothing"
    print(f"{name:12s} {len(stale):4d} pushes, staleness mean {np.mean(stale):5.2f}, max {max(stale)}")

# %%
by_student = {name: np.mean([p.staleness for p in run.trace.pushes if p.worker == int(w)])
              for w, name in run.trace.meta["students"].items()}
pushes = {name: sum(p.worker == int(w) for p in run.trace.pushes)
          for w, name in run.trace.meta["students"].items()}
slow_wifi = run.trace.meta["students"].get(str(slow_seat), "nobody (every seat was a student's)")
print(f"the slow Wi-Fi: {slow_wifi}, seat {slow_seat}")
print(f"the stalest on average: {max(by_student, key=by_student.get)}; "
      f"the fewest pushes: {min(pushes, key=pushes.get)}")

# %% [markdown] fragment
# The slow Wi-Fi (the seat printed above) has the stalest gradients: while it computes, every
# other student pushes several times. Its pushes are also the fewest. Both are the straggler of
# lecture 02, on a network instead of a simulator.

# %% [markdown] slide
# ## The room's run is a run like any other
# Its Timeline names each lane by its student, in seat order, and its captions name them the same
# way; it checks against the same invariants; it saves, loads and opens in Perfetto like a
# simulated one.

# %% tags=nbval-ignore-output
assert run.trace.meta["engine"] == "classroom"     # a run on the room's real clock
timeline = aps.widgets.Timeline(run, frame="stale")
timeline

# %% [markdown] slide
# ## Check your understanding
# 1. A student closes the laptop in the middle of an async run. What does the room do, and what
#    would it do under `policy="sync"`?
# 2. Why does the room count staleness in versions, not seconds, although everyone's clock is
#    different?
# 3. A student pushes a gradient computed on another problem. What stops it?
#
# <details><summary>Answers</summary>
#
# 1. The laptop's connection closes; if it is not back within two seconds (ZeroMQ's heartbeats
#    notice a laptop that vanished without closing it within a few more), the student is lost — a
#    Lost event with their name — and async goes on with the others. Under sync the barrier would
#    wait for that student forever, so the room stops and names who is missing. A Wi-Fi blip that
#    comes back in time keeps the seat: the seat belongs to the student's key, not the connection.
# 2. A version is the room's own count of updates: a push computed on v and applied to u is
#    u − v versions stale whatever the clocks say. Times are stamped by the room when a message
#    arrives, on one clock.
# 3. At join the room checks the problem's fingerprint (name, number of parameters, dtype, data
#    size, and the loss at x0) and refuses another; every push must then have exactly the
#    parameters' shape and dtype, finite values, and a norm within `max_norm_ratio` (100) times
#    the class's recent pushes, or it is refused and counted — and never applied. A gradient of
#    the right form computed on the wrong data gets through: the room trusts a seated student to
#    compute, not to end the run (docs/classroom.md, the threat model).
# </details>
#
# Back to [00 · Start here](00-start-here.ipynb).
