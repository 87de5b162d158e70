"""What communication costs, in a simple model: a parameter server against ring all-reduce.

Every worker holds `size` parameters of `bytes_per` bytes and computes a gradient in
`compute[k]` seconds. Every link is full duplex: it carries `bandwidth` bytes per second in each
direction at once, and messages pay nothing else (no latency). Both architectures are counted
the same way: the time of a round is the bytes through the busiest link, in one direction,
divided by the bandwidth. A parameter server's own link carries every worker's gradient in while
it sends every worker's parameters out; in ring all-reduce (Patarasuk & Yuan 2009) every worker
sends and receives 2(N-1)/N of the model, all links at once.

    sync PS          a round: the slowest worker's compute + N size bytes through the server link
    ring all-reduce  a round: the slowest worker's compute + 2 (N-1)/N size bytes per link
    async PS         no rounds: each worker's gradient takes its compute, its push and its pull
                     (2 size bytes, one after the other, on its own link), and the server link
                     admits at most bandwidth / size gradients a second (in and out at once)

A gradient that touches a fraction `density` of the parameters (sparse: embeddings) costs a
parameter server only that fraction; ring all-reduce moves the dense tensor.

The result is gradients per second. It says nothing about what a gradient is worth: an async
gradient may be stale, a sync round averages N. The notebooks measure that part.
"""
import numpy as np


def gradients_per_second(policy, compute, size, bandwidth, bytes_per=4, density=1.0):
    """Gradients per second of `policy` ("sync_ps", "allreduce", "async_ps"). `density`: the
    fraction of the parameters a gradient touches; a parameter server moves only those rows
    (sparse pushes and pulls, as for embeddings), ring all-reduce moves the dense tensor."""
    compute = np.asarray(compute, dtype=float)
    n, model = compute.size, size * bytes_per
    if policy != "allreduce":
        model *= density
    if policy == "sync_ps":
        return n / (compute.max() + n * model / bandwidth)
    if policy == "allreduce":
        return n / (compute.max() + 2 * (n - 1) / n * model / bandwidth)
    if policy == "async_ps":
        workers = np.sum(1.0 / (compute + 2 * model / bandwidth))
        return min(workers, bandwidth / model)
    raise ValueError(f"policy={policy!r} is not allowed: policy must be one of 'sync_ps', "
                     f"'allreduce', 'async_ps'")
