"""What communication costs, in a simple model: a parameter server against ring all-reduce.

Every worker holds `size` parameters of `bytes_per` bytes and computes a gradient in
`compute[k]` seconds. Every link is full duplex: it carries `bandwidth` bytes per second in each
direction at once, and messages pay nothing else (no latency). Every architecture is counted the
same way: the time of a round is the bytes through the busiest link, in one direction, divided by
the bandwidth (the steps of a round pipelined in chunks, so no link waits for another). A
parameter server's own link carries every worker's gradient in while it sends every worker's
parameters out; in ring all-reduce (Patarasuk & Yuan 2009) every worker sends and receives
2(N-1)/N of the model, all links at once.

    sync PS          a round: the slowest worker's compute + N size bytes through the server link
    ring all-reduce  a round: the slowest worker's compute + 2 (N-1)/N size bytes per link
    async PS         no rounds: each worker's gradient takes its compute, its push and its pull
                     (2 size bytes, one after the other, on its own link), and the server link
                     admits at most bandwidth / size gradients a second (in and out at once)

A sharded server (Li et al. 2014; Jiang et al. 2020, BytePS): `servers` = k shards, each holding
1/k of the keys, so each shard's link carries 1/k of every push and pull, while each worker's own
link still carries the whole model out and in. Hierarchical (sync PS): `groups` = g groups of N/g
workers; a group's leader sums its members' gradients, pushes one sum, pulls once and passes the
parameters on, its members' traffic on the same links as the rest. Models through the busiest
link in one direction, per sync round:

    k dedicated shards                 max(1, N/k)      ties ring all-reduce at k = N^2 / 2(N-1)
    k shards on worker machines        (N + k - 2) / k  = 2(N-1)/N at k = N: ring all-reduce's count
      (colocated=True)
    g groups, k dedicated shards       max(N/g, g/k)    the leader's link carries N/g models
    g groups, k shards on leaders      N/g + (g - 2)/k

An async PS with k dedicated shards admits at most k bandwidth / size gradients a second.

A gradient that touches a fraction `density` of the parameters (sparse: embeddings) costs a
parameter server only that fraction; ring all-reduce moves the dense tensor. With groups that is
the best case, where a group's workers touch the same rows.

The result is gradients per second. It says nothing about what a gradient is worth: an async
gradient may be stale, a sync round averages N. The notebooks measure that part.
"""
import numpy as np

POLICIES = ("sync_ps", "allreduce", "async_ps")


def gradients_per_second(policy, compute, size, bandwidth, bytes_per=4, density=1.0, servers=1,
                         groups=None, colocated=False):
    """Gradients per second of `policy` ("sync_ps", "allreduce", "async_ps"). `density`: the
    fraction of the parameters a gradient touches; a parameter server moves only those rows
    (sparse pushes and pulls, as for embeddings), ring all-reduce moves the dense tensor.
    `servers`: the server's shards; `groups`, `colocated`: see `busiest_link_models`."""
    compute = np.asarray(compute, dtype=float)
    n, model = compute.size, size * bytes_per
    check_layout(policy, n, servers, groups, colocated)
    if policy != "allreduce":
        model *= density
    if policy == "async_ps":
        workers = np.sum(1.0 / (compute + 2 * model / bandwidth))
        return min(workers, servers * bandwidth / model)
    return n / (compute.max() + _busiest_link_models(policy, n, servers, groups, colocated)
                * model / bandwidth)


def busiest_link_models(policy, workers, servers=1, groups=None, colocated=False):
    """How many models the busiest link carries in one direction in one round of "sync_ps" or
    "allreduce" with `workers` workers (a server's models are `density` times smaller).
    `servers`: k shards, on machines of their own, or with `colocated` on k of the workers (with
    groups: on k group leaders). `groups`: g groups, each summed by its leader (None: no groups)."""
    check_layout(policy, workers, servers, groups, colocated)
    if policy == "async_ps":
        raise ValueError("policy='async_ps' is not allowed: an asynchronous server has no rounds; "
                         "use 'sync_ps' or 'allreduce'")
    return _busiest_link_models(policy, workers, servers, groups, colocated)


def _busiest_link_models(policy, workers, servers, groups, colocated):
    """busiest_link_models' count, for a layout already checked (gradients_per_second checks
    its own, once)."""
    if policy == "allreduce":
        return 2 * (workers - 1) / workers
    groups = workers if groups is None else groups
    leader = workers // groups                # its members' gradients in + one pull, and back out
    if colocated:
        return leader + (groups - 2) / servers
    return max(leader, groups / servers)


def check_layout(policy, workers, servers, groups, colocated):
    """Refuse a policy, or a layout of servers and groups, that the model does not count."""
    if policy not in POLICIES:
        raise ValueError(f"policy={policy!r} is not allowed: policy must be one of 'sync_ps', "
                         f"'allreduce', 'async_ps'")
    if isinstance(servers, bool) or not isinstance(servers, (int, np.integer)) or servers < 1:
        raise ValueError(f"servers={servers!r} is not allowed: servers must be a whole number of "
                         f"shards, 1 or more")
    if policy == "allreduce" and servers != 1:
        raise ValueError(f"servers={servers!r} is not allowed with policy='allreduce': ring "
                         f"all-reduce has no server; leave servers=1")
    if groups is not None and policy != "sync_ps":
        raise ValueError(f"groups={groups!r} is not allowed with policy={policy!r}: only "
                         f"'sync_ps' sums gradients in groups; leave groups=None")
    divisors = [g for g in range(1, workers + 1) if workers % g == 0]
    if groups is not None and groups not in divisors:
        raise ValueError(f"groups={groups!r} is not allowed: groups must split the {workers} "
                         f"workers evenly, one of {divisors}, or be None for no groups")
    if colocated not in (False, True):
        raise ValueError(f"colocated={colocated!r} is not allowed: colocated must be True or False")
    if colocated and policy != "sync_ps":
        raise ValueError(f"colocated={colocated!r} is not allowed with policy={policy!r}: only "
                         f"'sync_ps' places shards on the workers; leave colocated=False")
    hosts = workers if groups is None else groups
    if colocated and servers > hosts:
        raise ValueError(f"servers={servers!r} is not allowed with colocated=True and "
                         f"groups={groups!r}: each shard sits on its own "
                         f"{'worker' if groups is None else 'group leader'}, so at most {hosts}")
