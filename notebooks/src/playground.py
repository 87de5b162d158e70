# %% [markdown]
# # Playground
#
# Every knob of the lecture on one screen: change one and sync, async and ssp re-run side by side
# in the simulator (the plain function behind it is `aps.compare`). `make demo` serves this
# notebook with Voila (classroom mode).
#
# **Tasks** — predict first, then move the knob:
# 1. *Straggler.* Set "last worker ×" to 4. Which policy's loss-per-time curve moves, and why does
#    sync's loss per *version* not change at all?
# 2. *Stability.* Raise lr until async's run diverges (a message says so). Now switch the lr
#    schedule to `divide_by_staleness`: how much further can lr go? Then add workers: what happens
#    to the largest stable lr?
# 3. *SSP.* With a straggler, sweep "SSP: clocks ahead" from 0 to 10 and watch the staleness
#    histogram's tail and the ssp curve move between sync's and async's.
# 4. *Noise and time.* Set jitter to 1: the timeline loses its lockstep. Add a comm delay: which
#    policy pays for it most, per version and per unit of time?
# 5. *Momentum.* With 8 workers, raise momentum towards 0.9: async becomes unstable sooner than
#    sync (asynchrony already acts like momentum; notebook 09).
# 6. *Data.* Choose minibatches of 8 against the whole shard, and `sorted` shards against `iid`;
#    then the logistic problem and the quadratic (which has no data: some settings show why not).

# %%
import asyncps as aps

# %%
aps.widgets.Playground()
