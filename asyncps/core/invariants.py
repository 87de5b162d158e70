"""The promises every engine keeps, checked on a trace: `violations(trace)` lists the broken ones.

1. versions only increase, by one per applied update (one push under async/ssp,
   one round of every live worker's push under sync);
2. staleness == applied_to - computed_on >= 0, and 0 under sync;
3. under ssp with threshold s (max_clocks_ahead), a worker starts an iteration (pulls)
   at most s clocks ahead of the slowest live worker;
4. there is one loss per version;
5. under ksync and kasync with wait_for=k, every version is made by exactly k pushes, each from
   another worker; under ksync each is stale by 0, and a Drop is a push computed on an older
   version than the server's.
A lock-free trace (meta lock=False) promises none of this: updates may be lost.
A classroom trace names the seats taken when its run started (meta "seated"): the others were
empty, so sync's round and the SSP gate count the seated workers only.
"""


def violations(trace):
    if trace.meta.get("lock") is False:
        return []
    found = []
    policy, bound = trace.meta.get("policy"), trace.meta.get("max_clocks_ahead")
    workers = trace.workers
    seated = trace.meta.get("seated")
    empty = set() if seated is None else set(range(workers)) - set(seated)
    pushes = trace.pushes
    for p in pushes:
        if p.staleness != p.applied_to - p.computed_on or p.staleness < 0:
            found.append(f"{p}: staleness must be applied_to - computed_on >= 0")
        if policy == "sync" and p.staleness != 0:
            found.append(f"{p}: a sync push must have staleness 0")
    applied = [p.applied_to for p in pushes]
    if applied != sorted(applied):
        found.append("versions went backwards: applied_to is not non-decreasing")
    versions = len(trace.losses) - 1
    if trace.beyond:                                   # a limited trace: its kept prefix must be right
        versions = max(applied, default=-1) + 1
    if policy in ("async", "ssp") and applied != list(range(len(applied))):
        found.append("under async/ssp each push must make exactly one new version")
    if policy == "sync" and not trace.lost:
        complete = versions - 1 if trace.beyond else versions      # the last kept round may be cut
        counts = [applied.count(v) for v in range(max(complete, 0))]
        if any(c != workers - len(empty) for c in counts):
            found.append(f"under sync each version needs one push per worker ({workers - len(empty)}); "
                         f"got {counts}")
    if applied and versions not in (max(applied) + 1, max(applied)):
        found.append(f"{versions + 1} losses for {max(applied) + 1} versions made")
    if policy in ("ksync", "kasync"):
        found += _rounds_of_k(trace, pushes, versions, policy)
    if policy == "ssp" and bound is not None:
        clocks, gone = [0] * workers, set(empty)
        for e in trace.events:
            live = [c for w, c in enumerate(clocks) if w not in gone]
            if e.kind == "pull" and clocks[e.worker] - min(live) > bound:
                found.append(f"{e}: worker {e.worker} at clock {clocks[e.worker]} started more than "
                             f"s={bound} clocks ahead of the slowest ({min(live)})")
            elif e.kind == "push":
                clocks[e.worker] += 1
            elif e.kind == "lost":
                gone.add(e.worker)
    return found


def _rounds_of_k(trace, pushes, versions, policy):
    """Invariant 5: k pushes per version, from k different workers; ksync's are fresh and its
    drops are stale."""
    found, k = [], trace.meta.get("wait_for")
    rounds = {}
    for p in pushes:
        rounds.setdefault(p.applied_to, []).append(p.worker)
        if policy == "ksync" and p.staleness != 0:
            found.append(f"{p}: a ksync push must have staleness 0 (a stale one is dropped)")
    complete = versions - 1 if trace.beyond else versions
    for v in range(max(complete, 0)):
        who = rounds.get(v, [])
        if len(who) != k or len(set(who)) != k:
            found.append(f"under {policy} with wait_for={k} version v{v + 1} needs {k} pushes from "
                         f"{k} workers; got workers {who}")
    for d in trace.of_kind("drop"):
        if not d.computed_on < d.version:
            found.append(f"{d}: only a gradient computed on an older version is dropped")
    return found
