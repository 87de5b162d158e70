"""Several machines: one rank of an asyncps rpc world, for torchrun (or any launcher that sets RANK).

    torchrun --nnodes=2 --nproc-per-node=4 --rdzv-backend=c10d --rdzv-endpoint=HOST:29500 \\
        -m asyncps.launch --problem mlp --policy async --steps 2000 --allow-remote --out run.npz

Rank 0 hosts the parameter server; ranks 1..WORLD_SIZE-1 are workers. Every
rank builds the same problem and shards from --seed, so no data travels.
Rank 0 prints a summary and saves the Run (--out) for the notebooks' widgets.

Without torchrun, set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT yourself;
then rank 0 binds MASTER_ADDR:MASTER_PORT itself (127.0.0.1 by default).

Security: torch.distributed.rpc unpickles what it receives. A MASTER_ADDR
that is not loopback needs --allow-remote and prints a warning: run it only
on a network you trust.
"""
import argparse
import os
import sys

from .core.config import RunConfig
from .engines import rpc
from .engines.rpc import host, proxy
from .engines.worker import prepare

PROBLEMS = ("quadratic", "lsq", "logistic", "mlp")


def make_problem(name, seed):
    from . import problems

    return {"quadratic": lambda: problems.Quadratic(curvature=[1.0, 0.5, 0.1], x0=[1.0, 1.0, 1.0]),
            "lsq": lambda: problems.LeastSquares(n=4096, dim=32, seed=seed),
            "logistic": lambda: problems.Logistic(n=4096, dim=32, seed=seed),
            "mlp": lambda: problems.MLP(n=4096, dim=32, hidden=64, classes=8, seed=seed)}[name]()


def parse(argv, prog="python -m asyncps.launch"):
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("--problem", choices=PROBLEMS, default="lsq")
    p.add_argument("--policy", choices=("sync", "async", "ssp"), default="async")
    p.add_argument("--max-clocks-ahead", type=int, default=None,
                   help="the SSP threshold s: clocks the fastest worker may run ahead of the slowest")
    p.add_argument("--staleness", type=int, default=None, help=argparse.SUPPRESS)   # the old name
    p.add_argument("--lr", type=float, default=0.05)
    p.add_argument("--lr-schedule", choices=("constant", "divide_by_staleness"), default="constant")
    p.add_argument("--steps", type=int, default=1000, help="server versions to produce")
    p.add_argument("--batch-size", type=int, default=None)
    p.add_argument("--partition", choices=("iid", "by_label", "sorted"), default="iid")
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--timeout", type=float, default=60.0)
    p.add_argument("--out", default=None, help="rank 0 saves the Run here (.npz)")
    p.add_argument("--allow-remote", action="store_true",
                   help="allow a MASTER_ADDR that is not loopback (trusted networks only)")
    args = p.parse_args(argv)
    if args.staleness is not None:
        p.error("--staleness was renamed: use --max-clocks-ahead (the SSP threshold counts clocks the "
                "fastest worker may run ahead of the slowest, not a push's staleness)")
    return args


def config_of(args, workers):
    """The run's one configuration, from the command line."""
    return RunConfig(engine="rpc", workers=workers, policy=args.policy,
                     max_clocks_ahead=args.max_clocks_ahead, lr=args.lr,
                     lr_schedule=args.lr_schedule, steps=args.steps, partition=args.partition,
                     batch_size=args.batch_size, seed=args.seed, timeout=args.timeout,
                     devices=("cpu",) * workers, launcher="asyncps.launch")


def main(argv=None, prog="python -m asyncps.launch"):
    args = parse(sys.argv[1:] if argv is None else argv, prog)
    try:
        rank, world = int(os.environ["RANK"]), int(os.environ["WORLD_SIZE"])
    except KeyError as missing:
        sys.exit(f"asyncps.launch: {missing} is not set; start it with torchrun, or set RANK, "
                 f"WORLD_SIZE, MASTER_ADDR and MASTER_PORT")
    if world < 2:
        sys.exit(f"asyncps.launch: WORLD_SIZE={world}; it needs at least 2 (one server, one worker)")
    address = os.environ.get("MASTER_ADDR", rpc.LOOPBACK)
    port = int(os.environ.get("MASTER_PORT", "29500"))
    if address not in (rpc.LOOPBACK, "localhost", "::1"):
        if not args.allow_remote:
            sys.exit(f"asyncps.launch: MASTER_ADDR={address} is not loopback. torch rpc unpickles "
                     f"what it receives: pass --allow-remote only on a network you trust")
        if rank == 0:
            print(f"asyncps.launch: WARNING: listening for rank {rank} beyond loopback ({address}); "
                  f"torch rpc deserialises with pickle: trusted networks only", file=sys.stderr)

    problem = make_problem(args.problem, args.seed)
    config = config_of(args, world - 1)
    server, shards = prepare(problem, config)
    method = rpc.init_method(address, port)
    if rank == 0:
        if method.startswith("asyncps://"):
            rpc.listen(address, port)
        print(f"asyncps.launch: rank 0 serves {problem!r}, policy={args.policy}, {world - 1} workers, "
              f"rendezvous {method}", flush=True)
        copies = host.serve(server, world, method, args.timeout, 0.0)
        run = server.result([copies[k] for k in sorted(copies)])
        if args.out:
            run.save(args.out)
        print(f"asyncps.launch: {run!r}", flush=True)
    else:
        k = rank - 1
        proxy.work(k, problem, shards[k], config, world, method, 0.0)


if __name__ == "__main__":
    main()
