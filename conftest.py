"""Loaded by every pytest run in this repository (tests/, notebooks/, solutions/ or one notebook)."""
import os

# No progress bars here or in nbval's kernels (they inherit this): a bar appears only when a run
# lasts over 2 s, so with bars the committed notebook outputs would depend on the machine's speed.
os.environ.setdefault("TQDM_DISABLE", "1")
