# %% [markdown]
# # 00 · Start here
#
# **Learning goals**
# - see a parameter server run, step by step, in the first minute;
# - drive a widget: Play, step, and the frame slider;
# - know which notebook answers which question of the lecture.

# %% [markdown] slide
# ## A first animation
# Two workers share one parameter server. Each pulls the parameters (version **v0**), computes a
# gradient and pushes it back. Worker 1 is slower, so by the time it pushes, worker 0 has already
# moved the server to **v1**.

# %%
import asyncps as aps

problem = aps.problems.Quadratic(curvature=[1.0, 4.0], x0=[1.0, 1.0])
run = aps.simulate(problem, workers=2, policy="async", lr=0.1, steps=6, compute_times=[1, 1.5])
timeline = aps.widgets.Timeline(run, frame="stale")     # it opens on the first stale push
timeline

# %% [markdown] fragment
# Press **▶** to play, **step ▶** / **◀ step** to move one event, or drag the **frame** slider.
# The caption under the lanes narrates the current event. Red arrows are *stale* pushes.
# The widget opens on the first one, `frame="stale"`: the frame named in its caption.

# %% [markdown] slide
# ## What the widget shows, as text
# Every widget has a `.state` that says in words what it shows — handy when the widget can't
# render (a static page) and for checking your reading of the picture.

# %%
print(timeline.state)                         # the frame the widget shows: the first stale push
shown = run.trace.events[timeline.frame]      # its event, from the run
if shown.kind == "push" and shown.staleness > 0:
    print(f"worker {shown.worker}'s gradient was computed on v{shown.computed_on}, but the server "
          f"had already moved to v{shown.applied_to}: it is applied to v{shown.applied_to} anyway")
else:
    print("no push came late in this run: every gradient landed on the version it was computed on")

# %% [markdown] fragment
# That is the whole lecture in one sentence — the rest asks *why that still works*.

# %% [markdown] slide
# ## The trace behind it
# Every run — simulated or real — produces one `Trace` of events: Pull, Compute, Push, Wait.
# A Push knows the version it was `computed_on`, the version it was `applied_to`, and its
# `staleness` (their difference).

# %%
for push in run.trace.pushes[:4]:
    print(push)

# %% [markdown] slide
# ## The map of the lecture
# | notebook | the question it answers |
# |---|---|
# | [`01-synchronous-ps`](01-synchronous-ps.ipynb) | what is a parameter server; what does the barrier cost? |
# | [`02-asynchronous-ps`](02-asynchronous-ps.ipynb) | what happens without the barrier: v0, v1 and the stale push |
# | [`03a-similar-gradients`](03a-similar-gradients.ipynb) | claim A: are the workers' gradients similar? (split, batch size, phase) |
# | [`03b-more-iterations`](03b-more-iterations.ipynb) | claim B: more compute, more iterations — each policy at its best lr |
# | [`03c-staleness-and-the-lr`](03c-staleness-and-the-lr.ipynb) | why staleness needs a smaller lr; the staleness-aware lr and its bias |
# | [`04a-stale-synchronous-parallel`](04a-stale-synchronous-parallel.ipynb) | SSP: between sync and async — the gate and its bounds |
# | [`04b-when-ssp-pays`](04b-when-ssp-pays.ipynb) | SSP: when a threshold pays, over seeds |
# | [`04c-backup-workers-and-k-async`](04c-backup-workers-and-k-async.ipynb) | K-sync (backup workers) and K-async: async against fair opponents, random stragglers |
# | [`05a-local-updates`](05a-local-updates.ipynb) | why can't a worker just update its own copy? |
# | [`05b-periodic-averaging`](05b-periodic-averaging.ipynb) | periodic averaging (local SGD), messages in time, a push as a delta |
# | [`06-threads-processes-gpus`](06-threads-processes-gpus.ipynb) | the same algorithms on real threads and processes |
# | [`07-several-machines`](07-several-machines.ipynb) | torch.distributed: one server, workers on several machines |
# | [`08a-digits-race`](08a-digits-race.ipynb) | the race rerun on a real CNN and real digits, over 10 seeds and on processes |
# | [`08b-digits-beyond-the-race`](08b-digits-beyond-the-race.ipynb) | where that race stops holding; claim A measured on the same digits |
# | [`09-bias-momentum-allreduce`](09-bias-momentum-allreduce.ipynb) | where asynchrony costs: non-IID bias, implicit momentum, all-reduce |
# | [`10-the-class-is-the-cluster`](10-the-class-is-the-cluster.ipynb) | the classroom: your students' kernels are the workers |
# | [`playground`](playground.ipynb) | every knob on one screen (`make demo` serves it in Voila) |

# %% [markdown] slide
# ## Check your understanding
# 1. In the animation, which version did worker 1 read, and which version did its gradient land on?
# 2. How many versions does the server make when two workers each push once (async)?
# 3. Where would you look in `run.trace` to find every stale push?
#
# <details><summary>Answers</summary>
#
# 1. It read v0 and its gradient landed on v1: the sentence printed under `timeline.state` says so,
#    read from its Push (`computed_on`, `applied_to`, `staleness`), the second one printed.
# 2. Two: under async every push makes one new version, v1 and then v2.
# 3. `run.trace.pushes`, keeping those with `staleness > 0` (the red arrows in the Timeline).
# </details>
#
# Next: [01 · The synchronous parameter server](01-synchronous-ps.ipynb). Assignments live in
# `../exercises/`, numbered after the lecture they practise: [01 · the synchronous
# round](../exercises/01-sync-round.ipynb) goes with lecture 01, [02 · the asynchronous
# push](../exercises/02-async-push.ipynb) with 02, 03a and 03c with the parts of 03, and so on;
# each lecture's last cell links its own.
