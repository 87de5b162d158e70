"""Several machines: one rank of an asyncps rpc world, for torchrun (or any launcher that sets RANK).

    torchrun --nnodes=2 --nproc-per-node=4 --rdzv-backend=c10d --rdzv-endpoint=HOST:29500 \\
        -m asyncps.launch --problem mlp --policy async --steps 2000 --allow-remote --out run.npz

Rank 0 hosts the parameter server; ranks 1..WORLD_SIZE-1 are workers. Every
rank builds the same problem and shards from --seed, so no data travels.
Rank 0 prints a summary and saves the Run (--out) for the notebooks' widgets.

Your own problem: `--problem package.module:factory --problem-arg hidden=64`, where
`factory(seed=..., hidden=64)` returns an asyncps Problem (e.g. `aps.problems.from_torch(...)`);
the module must be importable on every machine, and the factory must build the same problem
from the same seed (its `seed` argument, when it has one, is --seed).

A dead worker rank: nobody on rank 0 can see another machine's processes, so a worker that has
not called the server for --timeout seconds is lost (async goes on; sync and ssp stop with an
error). A dead server: every worker exits, saying so. Under torchrun a dead rank takes the other
ranks of its node with it (torchrun's agent stops them all).

Without torchrun, set RANK, WORLD_SIZE, MASTER_ADDR and MASTER_PORT yourself;
then rank 0 binds MASTER_ADDR:MASTER_PORT itself (127.0.0.1 by default).

Security: torch.distributed.rpc unpickles what it receives. A MASTER_ADDR
that is not loopback needs --allow-remote and prints a warning: run it only
on a network you trust.
"""
import argparse
import ast
import importlib
import inspect
import os
import sys

from .core.config import RunConfig
from .engines import rpc
from .engines.rpc import host, proxy
from .engines.worker import prepare

PROBLEMS = ("quadratic", "lsq", "logistic", "mlp")


def make_problem(name, seed, arguments=None):
    """A built-in problem by name, or `package.module:factory` called with `arguments` (and
    seed=seed where the factory takes a seed)."""
    from . import problems

    if ":" in name:
        return _from_factory(name, seed, dict(arguments or {}))
    if arguments:
        raise ValueError(f"--problem-arg is not allowed with the built-in problem {name!r}: it is "
                         f"for --problem package.module:factory")
    return {"quadratic": lambda: problems.Quadratic(curvature=[1.0, 0.5, 0.1], x0=[1.0, 1.0, 1.0]),
            "lsq": lambda: problems.LeastSquares(n=4096, dim=32, seed=seed),
            "logistic": lambda: problems.Logistic(n=4096, dim=32, seed=seed),
            "mlp": lambda: problems.MLP(n=4096, dim=32, hidden=64, classes=8, seed=seed)}[name]()


def _from_factory(spec, seed, arguments):
    from .problems.base import Problem

    module, _, name = spec.partition(":")
    try:
        factory = getattr(importlib.import_module(module), name)
    except (ImportError, AttributeError) as err:
        raise ValueError(f"--problem {spec} cannot be loaded ({err}): give package.module:factory, "
                         f"with the module importable here (on PYTHONPATH) on every rank") from None
    if "seed" not in arguments and _takes(factory, "seed"):
        arguments["seed"] = seed
    problem = factory(**arguments)
    if not isinstance(problem, Problem):
        raise ValueError(f"--problem {spec} returned {type(problem).__name__}, not an asyncps Problem "
                         f"(e.g. aps.problems.from_torch(model, X, y))")
    return problem


def _takes(fn, name):
    try:
        parameters = inspect.signature(fn).parameters.values()
    except (TypeError, ValueError):
        return False
    return any(p.name == name or p.kind is p.VAR_KEYWORD for p in parameters)


def _argument(text):
    """--problem-arg key=value: the value as a Python literal (64, 0.1, "relu", [64, 32]), else text."""
    key, sep, value = text.partition("=")
    if not sep or not key.isidentifier():
        raise argparse.ArgumentTypeError(f"{text!r} is not key=value (e.g. hidden=64)")
    try:
        return key, ast.literal_eval(value)
    except (ValueError, SyntaxError):
        return key, value


def _problem(text):
    if text in PROBLEMS or (":" in text and all(part for part in text.partition(":")[::2])):
        return text
    raise argparse.ArgumentTypeError(f"{text!r} is not allowed: one of {', '.join(PROBLEMS)}, or "
                                     f"package.module:factory (your own)")


def parse(argv, prog="python -m asyncps.launch"):
    p = argparse.ArgumentParser(prog=prog, description=__doc__.split("\n\n")[0])
    p.add_argument("--problem", type=_problem, default="lsq",
                   help=f"{', '.join(PROBLEMS)}, or package.module:factory (a function returning a "
                        f"Problem, called with seed=--seed where it takes one)")
    p.add_argument("--problem-arg", type=_argument, action="append", default=[], metavar="KEY=VALUE",
                   help="a keyword argument for the factory (repeat it); the value a Python literal")
    p.add_argument("--policy", choices=("sync", "async", "ssp", "ksync", "kasync"), default="async")
    p.add_argument("--wait-for", type=int, default=None,
                   help="the pushes that close a round (policy ksync or kasync)")
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
                     max_clocks_ahead=args.max_clocks_ahead, wait_for=args.wait_for, lr=args.lr,
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

    try:
        problem = make_problem(args.problem, args.seed, args.problem_arg)
    except ValueError as err:
        sys.exit(f"asyncps.launch: {err}")
    config = config_of(args, world - 1)
    server, shards = prepare(problem, config)
    method = rpc.init_method(address, port)
    if rank == 0:
        if method.startswith("asyncps://"):
            rpc.listen(address, port)
        print(f"asyncps.launch: rank 0 serves {problem!r}, policy={args.policy}, {world - 1} workers, "
              f"rendezvous {method}", flush=True)
        try:
            copies = host.serve(server, world, method, args.timeout, 0.0, formed=lambda: print(
                f"asyncps.launch: every rank has joined: the run starts", flush=True))
        except (RuntimeError, TimeoutError) as err:      # a lost worker under sync / ssp, a gate
            _leave(f"rank 0: the run failed: {err}")
        run = server.result([copies[k] for k in sorted(copies)])
        for lost in run.trace.lost:
            print(f"asyncps.launch: worker {lost.worker} was lost: {lost.reason}", flush=True)
        if args.out:
            run.save(args.out)
        print(f"asyncps.launch: {run!r}", flush=True)
    else:
        k = rank - 1
        try:
            proxy.work(k, problem, shards[k], config, world, method, 0.0)
        except proxy.ServerLost as err:
            sys.exit(f"asyncps.launch: {err}")


def _leave(message):
    """Rank 0 failed: end rpc without a barrier (the workers then exit, saying the server is
    gone) and exit with the message."""
    import torch.distributed.rpc as rpc

    print(f"asyncps.launch: {message}", file=sys.stderr, flush=True)
    try:
        rpc.shutdown(graceful=False)
    finally:
        os._exit(1)                                      # no atexit waits on a broken rpc world


if __name__ == "__main__":
    main()
