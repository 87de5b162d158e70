# %% [markdown]
# # Live: a straggler in a real run
#
# Four worker processes train one model through one parameter server, asynchronously, right now on
# this machine. Worker 3 is a straggler: it sleeps longer per gradient than the others. Nobody waits
# for it, so each of its pushes lands on a server that has moved on: watch its pushes in the
# timeline and the long tail of the staleness histogram. `make demo PAGE=live` serves this page
# with Voila (classroom mode); the run starts when the page opens.
#
# **Tasks** — predict first, then act:
# 1. *Slow worker 0 too.* Which pushes become stale now, and does the loss curve care?
# 2. *Speed worker 3 up* (its slider to 0): the histogram's tail stops growing.
# 3. *Raise lr* until the loss climbs: stale gradients limit how large a step may be (notebook 03c).
# 4. *Pause*: every worker waits before handing in its next gradient. Resume.
# 5. *Kill worker 3*: async goes on without it (a sync run would stop with an error).
# 6. *Stop.* The run also ends by itself after its steps, and after a few minutes at the latest:
#    reload the page for a new run.

# %%
import threading

import asyncps as aps

# %% tags=nbval-ignore-output
problem = aps.problems.LeastSquares(n=512, dim=10, seed=0)
live = aps.train(problem, workers=4, policy="async", lr=0.02, steps=15_000,
                 slowdown=[0.02, 0.02, 0.02, 0.1], engine="processes", live=True)
assert live.state["slowdown"] == [0.02, 0.02, 0.02, 0.1]      # worker 3 is the straggler
live

# %%
# A forgotten tab leaves nothing running: whatever the sliders and the pause did, the run stops
# after 3 minutes. (A closed page's kernel ends too, and its workers with it: make demo culls
# kernels left without a page.)
deadline = threading.Timer(180, live.stop)
deadline.daemon = True
deadline.start()
