"""One run configuration: the arguments of `simulate`, `train` and `launch`, checked once.

The entry points build a frozen `RunConfig` from their keyword arguments (its fields are their
arguments: the signatures of `simulate` and `train` are made of them) and pass it down whole:
the server, the worker loop and every engine read what they need from it, and `trace.meta` is
written once, by `config.meta(problem_name)`. Nothing below the entry points takes the run's
arguments one by one.
"""
import difflib
from dataclasses import dataclass, fields, replace

from . import checks, hooks
from .policies import Policy, lr_schedule as schedule_of, make_policy, schedule_name

ENGINES = ("threads", "processes", "rpc")          # the real engines of aps.train
DEVICES = ("cpu", "cuda", "auto")
PARTITIONS = ("iid", "by_label", "sorted")
LOOPBACK = "127.0.0.1"
MAX_SECONDS = 1e6          # timeouts and slowdowns: ~11 days; longer waits overflow the clock
SIMULATE_ONLY = ("compute_times", "jitter", "random_delay", "comm_delay")
TRAIN_ONLY = ("engine", "device", "slowdown", "lock", "timeout", "checkpoint", "checkpoint_every",
              "address", "allow_remote")
SET_BY_ENTRY_POINTS = ("devices", "launcher")
# Names a learner may reach for, and the argument that means it (a misspelling is matched too).
SYNONYMS = {"learning_rate": "lr", "step_size": "lr", "eta": "lr", "num_workers": "workers",
            "n_workers": "workers", "nworkers": "workers", "iterations": "steps",
            "num_steps": "steps", "n_steps": "steps", "versions": "steps", "mode": "policy",
            "consistency": "policy", "threshold": "max_clocks_ahead", "bound": "max_clocks_ahead",
            "ssp_threshold": "max_clocks_ahead", "max_staleness": "max_clocks_ahead",
            "k": "wait_for", "backup_workers": "wait_for",
            "schedule": "lr_schedule", "batch": "batch_size", "random_seed": "seed",
            "push": "apply", "update": "apply", "barrier": "average"}
RENAMED = {"staleness": ("max_clocks_ahead", "the SSP threshold counts clocks (pushes) the fastest "
                         "worker may run ahead of the slowest; staleness is only a push's "
                         "applied_to - computed_on (Push.staleness)")}


@dataclass(frozen=True)
class RunConfig:
    workers: int = 2
    policy: str | Policy = "async"    # given as a name; held as its Policy (policies.py)
    max_clocks_ahead: int | None = None  # ssp's threshold s; None: SSP_MAX_CLOCKS_AHEAD (policies.py)
    wait_for: int | None = None       # ksync's and kasync's k: the pushes that close a round
    lr: float = 0.1
    lr_schedule: object = "constant"  # a name, or rate(lr, staleness); held as the function
    momentum: float = 0.0
    steps: int = 100                  # server versions after v0 (push_every=None: local steps)
    partition: str = "iid"
    batch_size: int | None = None     # None: the whole shard
    fetch_every: int | None = None    # None: pull right after each push
    push_every: int | None = 1        # None: never push (local copies only)
    seed: int = 0
    apply: object = None              # a learner's push, round, gate (hooks.py)
    average: object = None
    gate: object = None
    loss_every: int = 1
    trace_limit: int | None = None
    # the simulator's virtual time
    compute_times: tuple | None = None
    jitter: float = 0.0
    random_delay: float = 0.0         # mean of an exponential extra time per gradient
    comm_delay: float = 0.0
    # the real engines
    engine: str = "simulate"
    device: str = "cpu"
    slowdown: tuple | None = None
    lock: bool = True
    timeout: float = 60.0
    checkpoint: object = None
    checkpoint_every: int = 100
    address: str = LOOPBACK
    allow_remote: bool = False
    devices: tuple = ()               # set by train once the device is resolved
    launcher: str | None = None       # set by asyncps.launch

    def __post_init__(self):
        def put(name, value):
            object.__setattr__(self, name, value)

        workers = checks.integer("workers", self.workers, minimum=1)
        put("workers", workers)
        put("seed", checks.integer("seed", self.seed, minimum=0))
        put("steps", checks.integer("steps", self.steps, minimum=0))
        put("lr", checks.real("lr", self.lr, positive=True))
        for name in ("fetch_every", "push_every", "batch_size", "trace_limit"):
            if getattr(self, name) is not None:
                put(name, checks.integer(name, getattr(self, name), minimum=0 if name == "trace_limit" else 1))
        checks.choice("partition", self.partition, PARTITIONS)
        policy = self.policy
        if isinstance(policy, Policy):        # dataclasses.replace passes the Policy back in
            policy = policy.name
        put("policy", make_policy(policy, self.max_clocks_ahead, self.wait_for, workers))
        put("max_clocks_ahead", self.policy.max_ahead if self.policy.name == "ssp" else None)
        put("wait_for", self.policy.wait_for)
        hooks.check(apply=self.apply, average=self.average, gate=self.gate, momentum=self.momentum,
                    policy=self.policy, lr_schedule=self.lr_schedule)
        put("lr_schedule", schedule_of(self.lr_schedule))
        put("momentum", checks.real("momentum", self.momentum, minimum=0.0, below=1.0))
        put("loss_every", checks.integer("loss_every", self.loss_every, minimum=1))
        if self.engine == "simulate":
            put("jitter", checks.real("jitter", self.jitter, minimum=0.0, below=5.0))  # e^±15 already
            put("random_delay", checks.real("random_delay", self.random_delay, minimum=0.0,
                                            below=MAX_SECONDS))
            # with a random delay a worker may need no fixed time at all (the pure exponential)
            times = [1.0] * workers if self.compute_times is None else checks.vector(
                "compute_times", self.compute_times, length=workers, minimum=0.0,
                positive=not self.random_delay)
            put("compute_times", tuple(float(t) for t in times))
            put("comm_delay", checks.real("comm_delay", self.comm_delay, minimum=0.0))
        else:
            self._check_real_engine(put)

    def _check_real_engine(self, put):
        checks.choice("engine", self.engine, ENGINES)
        checks.choice("device", self.device, DEVICES)
        slowdown = [0.0] * self.workers if self.slowdown is None else checks.vector(
            "slowdown", self.slowdown, length=self.workers, minimum=0.0)
        if max(slowdown) >= MAX_SECONDS:                # a sleep that long overflows the clock
            raise checks.bad("slowdown", self.slowdown, f"a list of seconds per gradient, each "
                             f">= 0 and < {MAX_SECONDS:g} (~11 days)")
        put("slowdown", tuple(float(s) for s in slowdown))
        put("timeout", checks.real("timeout", self.timeout, positive=True, below=MAX_SECONDS))
        put("checkpoint_every", checks.integer("checkpoint_every", self.checkpoint_every, minimum=1))
        for name in ("lock", "allow_remote"):
            if not isinstance(getattr(self, name), bool):
                raise checks.bad(name, getattr(self, name), "True or False", TypeError)
        on_gpu = any(d != "cpu" for d in self.devices) or (not self.devices and self.device == "cuda")
        if not self.lock and (self.engine != "threads" or self.policy.name != "async" or on_gpu):
            raise ValueError(f"lock=False is not allowed with engine={self.engine!r}, policy="
                             f"{self.policy.name!r}, device={self.device!r}: lock-free (Hogwild-style) "
                             f"updates are offered for engine='threads', policy='async' on the CPU only")
        if self.engine != "rpc" and (self.address != LOOPBACK or self.allow_remote):
            raise TypeError(f"address={self.address!r} and allow_remote={self.allow_remote!r} are "
                            f"options of engine='rpc' only")
        if not isinstance(self.address, str) or not self.address:
            raise checks.bad("address", self.address, "a host name or IP address (text)", TypeError)

    @property
    def simulated(self):
        return self.engine == "simulate"

    def replace(self, **changes):
        return replace(self, **changes)

    def worker_side(self):
        """What a worker process needs: the server-side functions (a learner's hooks, the lr
        schedule, the checkpoint path) stay with the server."""
        return replace(self, apply=None, average=None, gate=None, lr_schedule="constant",
                       checkpoint=None)

    def meta(self, problem, dtype="float64"):
        """What `trace.meta` says about the run (and the problem's name and dtype): written once."""
        meta = {"workers": self.workers, "policy": self.policy.name,
                "max_clocks_ahead": self.max_clocks_ahead, "lr": self.lr,
                "lr_schedule": schedule_name(self.lr_schedule), "momentum": self.momentum,
                "partition": self.partition, "batch_size": self.batch_size,
                "fetch_every": self.fetch_every, "push_every": self.push_every, "seed": self.seed,
                "problem": problem, "dtype": dtype, "engine": self.engine,
                "clock": "virtual" if self.simulated else "wall"}
        if self.simulated:
            meta.update(compute_times=list(self.compute_times), jitter=self.jitter,
                        comm_delay=self.comm_delay)
            if self.random_delay:
                meta["random_delay"] = self.random_delay
        else:
            meta.update(device=self.device, devices=list(self.devices),
                        slowdown=list(self.slowdown), lock=self.lock)
        if self.wait_for is not None:
            meta["wait_for"] = self.wait_for
        if self.launcher:
            meta["launcher"] = self.launcher
        return meta


def argument_names(entry):
    """The keyword arguments of `simulate` or `train`: RunConfig's fields, minus the other's."""
    skip = set(SET_BY_ENTRY_POINTS)
    skip |= set(TRAIN_ONLY) if entry == "simulate" else set(SIMULATE_ONLY)
    return [f.name for f in fields(RunConfig) if f.init and f.name not in skip]


def refuse_renamed(arguments):
    """An old keyword (staleness=) raises an error that names the new one."""
    for old, (new, why) in RENAMED.items():
        if old in arguments:
            raise TypeError(f"{old}= was renamed: use {new}= ({why})")


def renamed_keywords(function):
    """`function` (an entry point with its own signature) explains an old keyword, too."""
    def entry(*args, **kwargs):
        refuse_renamed(kwargs)
        return function(*args, **kwargs)
    entry.__name__, entry.__qualname__, entry.__doc__ = (function.__name__, function.__qualname__,
                                                         function.__doc__)
    entry.__wrapped__ = function              # help() and Shift-Tab show function's signature
    return entry


def closest(name, allowed):
    """The argument a mistyped or borrowed keyword most likely means, or None."""
    known = {a: a for a in allowed}
    known.update({word: meant for word, meant in SYNONYMS.items() if meant in allowed})
    key = name.lower().replace("-", "_")
    found = difflib.get_close_matches(key, list(known), n=1, cutoff=0.75)
    return known[found[0]] if found else None


def configure(entry, arguments, shown_as=None, shown_allows=None):
    """The RunConfig of a call `entry(problem, **arguments)`; old or unknown keywords explained.
    `shown_as`: the function the messages name, if not `entry` (a room's `serve` checks train's),
    and `shown_allows`: the arguments that function takes, which a hint names."""
    shown_as, function = shown_as or entry, f"{shown_as}()" if shown_as else f"aps.{entry}"
    refuse_renamed(arguments)
    allowed = argument_names(entry)
    for name in arguments:
        if name not in allowed:
            other = "train" if entry == "simulate" else "simulate"
            if name in argument_names(other):
                hint = f": it is an argument of aps.{other} only"
            else:
                named = list(shown_allows or allowed)
                meant = closest(name, named)
                hint = (f": did you mean {meant}=? The arguments of {function} are "
                        if meant else "; allowed: ") + ", ".join(named)
            raise TypeError(f"{shown_as}() got an unexpected keyword argument {name!r}{hint}")
    if entry == "simulate":
        arguments = {**arguments, "engine": "simulate"}
    elif arguments.get("engine", "threads") == "simulate":
        raise ValueError("engine='simulate' is not allowed in train: use aps.simulate(...) "
                         f"for virtual time, or engine one of {', '.join(map(repr, ENGINES))}")
    else:
        arguments = {"engine": "threads", **arguments}
        given = sorted({"address", "allow_remote"} & set(arguments))
        if given and arguments["engine"] != "rpc":
            raise TypeError(f"{shown_as}() got {given}: these options are for engine='rpc' only")
    return RunConfig(**arguments)
