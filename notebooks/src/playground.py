# %% [markdown]
# # Playground
#
# Every knob of the lecture on one screen: change one and sync, async and ssp re-run side by side.
# `make demo` serves this notebook with Voila (classroom mode).

# %%
import asyncps as aps

# %%
aps.widgets.Playground()
