"""The events of a run: what every engine records and every view renders.

    Pull(worker, version, time)                       a worker reads version v
    Compute(worker, start, end, computed_on)          it computes a gradient on v
    Push(worker, computed_on, applied_to, staleness, time)
                                                      the server applies it to its current version
    Drop(worker, computed_on, version, time)          ksync: its gradient came after its round
                                                      closed (the server was at `version`): not applied
    Wait(worker, start, end, reason)                  it sits at the barrier, the SSP gate or
                                                      (ksync, kasync) until its round closes
    Lost(worker, time, reason)                        a real worker died; the run went on without it
    Control(what, worker, value, time)                someone changed a live run (engines/live.py)

``staleness = applied_to - computed_on``: a gradient computed on v0 and applied to v1 is stale
by one version. It is the only thing called staleness in asyncps.

A Control is not something the protocol does but something done *to* the run while it ran:
"slow" (worker, extra seconds per gradient), "lr" (the new lr), "pause", "resume", "kill"
(worker), "stop". It is recorded like the rest, so a replay shows when the run was changed.
"""
from dataclasses import dataclass
from typing import ClassVar


@dataclass(frozen=True)
class Pull:
    worker: int
    version: int
    time: float
    kind: ClassVar[str] = "pull"


@dataclass(frozen=True)
class Compute:
    worker: int
    start: float
    end: float
    computed_on: int
    kind: ClassVar[str] = "compute"


@dataclass(frozen=True)
class Push:
    worker: int
    computed_on: int
    applied_to: int
    staleness: int
    time: float
    kind: ClassVar[str] = "push"


@dataclass(frozen=True)
class Drop:
    worker: int
    computed_on: int
    version: int         # the server's version when it arrived (> computed_on)
    time: float
    kind: ClassVar[str] = "drop"


@dataclass(frozen=True)
class Wait:
    worker: int
    start: float
    end: float
    reason: str          # "barrier" (sync), "ssp" (the SSP gate) or "round" (ksync, kasync)
    kind: ClassVar[str] = "wait"


@dataclass(frozen=True)
class Lost:
    worker: int
    time: float
    reason: str          # e.g. "killed by signal 9"
    kind: ClassVar[str] = "lost"


CONTROLS = ("slow", "lr", "pause", "resume", "kill", "stop")


@dataclass(frozen=True)
class Control:
    what: str                # one of CONTROLS
    worker: int | None       # the worker it concerns ("slow", "kill"), else None
    value: float | None      # the seconds ("slow") or the lr ("lr"), else None
    time: float
    kind: ClassVar[str] = "control"


EVENT_TYPES = {cls.kind: cls for cls in (Pull, Compute, Push, Drop, Wait, Lost, Control)}
