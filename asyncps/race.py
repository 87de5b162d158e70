"""`aps.race`: one instrument for every fair comparison of policies.

    result = aps.race(problem, {"sync": dict(policy="sync"), "async": dict(policy="async")},
                      target=0.01, workers=4, steps=200, batch_size=16, compute_times=[1, 1, 1, 3])
    result                  # a table: tuned lr, times on held-out seeds, paired wins

A ranking is only as fair as its weakest step, so a race does each step the same way for all:

1. **Its own lr.** Each contender's lr is tuned on the tuning seeds: a coarse log grid, extended
   past an edge while the best lr sits on it, then refined (geometric midpoints) until both
   neighbours of the best are within a factor `refine_to`. An lr's score is the median time over
   the tuning seeds (never meeting the target: inf; ties go to the lower median final loss).
2. **Held-out seeds.** The race runs on `race_seeds`, sharing no seed with the tuning.
3. **Two times per run.** First touch (`Run.time_to_reach`) and stay (`Run.time_to_stay_below`:
   never back above the target afterwards); `measure` picks the one that tunes and ranks.
4. **Paired wins.** On each seed A beats B when its time is shorter: wins, losses and ties, a 95 %
   Wilson interval on A's win fraction (ties left out), the median per-seed time ratio A / B with a
   seeded bootstrap interval.

A contender is a dict of `aps.simulate` arguments (all but lr and seed; `common` goes to each),
or any function (lr, seed) -> Run, e.g. `lambda lr, seed: aps.train(problem, lr=lr, seed=seed, ...)`.
"""
import html
import math
from dataclasses import dataclass
from itertools import permutations

import numpy as np

from .core import checks
from .core.run import Run
from .engines.simulate import simulate

MEASURES = ("stay", "first_touch")
COARSE = 5                        # points in the starting grid when lrs is a (low, high) range
Z95 = 1.959963984540054           # the normal quantile of a two-sided 95 % interval


@dataclass(frozen=True)
class Contender:
    """One contender's lr search and its race. Times are per race seed (inf: never met)."""
    name: str
    lr: float                     # the tuned lr
    tried: tuple                  # ((lr, tuning score), ...) for every lr tried, by lr
    bracketed: bool               # both neighbours of lr were tried within refine_to
    first_touch: tuple
    stay: tuple
    computed_per_time: float      # gradients computed (applied + dropped) per unit of time: median
    applied_per_time: float       # gradients applied (pushes) per unit of time: median

    def times(self, measure="stay"):
        return np.array(getattr(self, checks.choice("measure", measure, MEASURES)))

    def median(self, measure="stay"):
        return float(np.median(self.times(measure)))

    def spread(self, measure="stay"):
        """(fastest, slowest) over the race seeds."""
        times = self.times(measure)
        return float(times.min()), float(times.max())


@dataclass(frozen=True)
class Pair:
    """A against B on the same race seeds, by the race's measure."""
    a: str
    b: str
    wins: int                     # seeds where A was faster than B
    losses: int                   # seeds where B was faster
    ties: int
    win_interval: tuple           # 95 % Wilson interval on wins / (wins + losses)
    ratio: float                  # median over seeds of time A / time B (< 1: A is faster)
    ratio_interval: tuple         # its 95 % bootstrap interval


@dataclass(frozen=True)
class Race:
    """What aps.race returns: a report per contender and a paired comparison per ordered pair."""
    target: float
    measure: str
    tune_seeds: tuple
    race_seeds: tuple
    contenders: tuple             # Contender, in the order given
    pairs: tuple                  # Pair for every ordered pair (A, B), A != B

    def __getitem__(self, name):
        """The Contender called `name`."""
        found = [c for c in self.contenders if c.name == name]
        if not found:
            raise KeyError(f"{name!r} is not a contender: the contenders are "
                           + ", ".join(repr(c.name) for c in self.contenders))
        return found[0]

    def pair(self, a, b):
        """The Pair of contender `a` against contender `b`."""
        found = [p for p in self.pairs if (p.a, p.b) == (a, b)]
        if not found:
            raise KeyError(f"no pair ({a!r}, {b!r}): both must be contenders, and different")
        return found[0]

    def rows(self):
        """(contender rows, pair rows) as lists of strings: what table() and the HTML show."""
        head = ["contender", "lr", "lrs tried", f"{self.measure} median [min–max]",
                f"{_other(self.measure)} median [min–max]", "met", "computed/t", "applied/t"]
        table = [head]
        for c in self.contenders:
            spans = [f"{_num(c.median(m))} [{_num(c.spread(m)[0])}–{_num(c.spread(m)[1])}]"
                     for m in (self.measure, _other(self.measure))]
            met = int(np.isfinite(c.times(self.measure)).sum())
            table.append([c.name, f"{c.lr:.4g}" + ("" if c.bracketed else " (max_evals)"),
                          str(len(c.tried)), *spans, f"{met}/{len(self.race_seeds)}",
                          f"{c.computed_per_time:.3g}", f"{c.applied_per_time:.3g}"])
        order = [c.name for c in self.contenders]
        pairs = [["A vs B", "wins–losses–ties", "A's win fraction (95 %)", "median time A/B (95 %)"]]
        for p in self.pairs:
            if order.index(p.a) < order.index(p.b):
                low, high = p.win_interval
                pairs.append([f"{p.a} vs {p.b}", f"{p.wins}–{p.losses}–{p.ties}",
                              f"{low:.2f}–{high:.2f}",
                              f"{_num(p.ratio)} [{_num(p.ratio_interval[0])}–{_num(p.ratio_interval[1])}]"])
        return table, pairs

    def title(self):
        return (f"race to loss <= {self.target:g} ({self.measure}), lr tuned on seeds "
                f"{_seeds(self.tune_seeds)}, raced on held-out seeds {_seeds(self.race_seeds)}")

    def table(self):
        """Plain text: aligned columns, one row per contender, then one row per pair."""
        return "\n\n".join([self.title()] + [_aligned(rows) for rows in self.rows() if len(rows) > 1])

    def __repr__(self):
        return self.table()

    def _repr_html_(self):
        parts = [f"<p><b>{html.escape(self.title())}</b></p>"]
        for rows in self.rows():
            if len(rows) > 1:
                head = "".join(f"<th>{html.escape(h)}</th>" for h in rows[0])
                body = "".join("<tr>" + "".join(f"<td>{html.escape(v)}</td>" for v in row) + "</tr>"
                               for row in rows[1:])
                parts.append(f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>")
        return "\n".join(parts)


def race(problem, contenders, *, target, tune_seeds=range(0, 5), race_seeds=range(100, 110),
         lrs=(0.01, 10.0), refine_to=1.15, measure="stay", max_evals=30, bootstrap=1000,
         bootstrap_seed=0, **common):
    """Tune each contender's lr on `tune_seeds`, race them on the held-out `race_seeds`, and
    compare them in pairs on the same seeds. Returns a Race (a table in a notebook).

    `contenders`: {name: dict of aps.simulate arguments (no lr, no seed)} or {name: function
    (lr, seed) -> Run}; `common`: aps.simulate arguments every dict contender gets. `lrs`: a
    (low, high) range, searched from a coarse log grid of 5, or a starting grid of 3 or more lrs.
    `max_evals`: the most lrs tried per contender. `measure`: "stay" or "first_touch". The
    bootstrap of the time ratios draws `bootstrap` resamples from default_rng(bootstrap_seed).
    """
    target = checks.real("target", target)
    measure = checks.choice("measure", measure, MEASURES)
    refine_to = checks.real("refine_to", refine_to, minimum=1.0, positive=True)
    max_evals = checks.integer("max_evals", max_evals, minimum=3)
    bootstrap = checks.integer("bootstrap", bootstrap, minimum=100)
    bootstrap_seed = checks.integer("bootstrap_seed", bootstrap_seed, minimum=0)
    tune, held = _seed_list("tune_seeds", tune_seeds), _seed_list("race_seeds", race_seeds)
    shared = sorted(set(tune) & set(held))
    if shared:
        raise ValueError(f"race_seeds={_seeds(held)} is not allowed: race_seeds must be held out, "
                         f"sharing no seed with tune_seeds={_seeds(tune)} (both have {shared})")
    grid = _grid(lrs)
    runners = _runners(problem, contenders, common)
    reports = []
    for name, run in runners.items():
        lr, tried, bracketed = _tune(name, run, grid, tune, target, measure, refine_to, max_evals)
        runs = [_checked(name, run(lr, seed)) for seed in held]
        rates = [_rates(r) for r in runs]
        reports.append(Contender(name, lr, tried, bracketed,
                                 tuple(_time(r, target, "first_touch") for r in runs),
                                 tuple(_time(r, target, "stay") for r in runs),
                                 float(np.median([c for c, _ in rates])),
                                 float(np.median([a for _, a in rates]))))
    rng = np.random.default_rng(bootstrap_seed)
    pairs = tuple(_pair(a, b, measure, rng, bootstrap) for a, b in permutations(reports, 2))
    return Race(target, measure, tune, held, tuple(reports), pairs)


# -- the lr search ---------------------------------------------------------------------------
def _tune(name, run, grid, seeds, target, measure, refine_to, max_evals):
    """(best lr, ((lr, score), ...), bracketed): the grid, extended past the edge the best lr
    sits on, then refined around it until both neighbours are within refine_to (or max_evals)."""
    tried = {}                                            # lr -> (median time, median final loss)
    step = max(b / a for a, b in zip(grid, grid[1:]))     # how far an edge is extended

    def evaluate(lr):
        runs = [_checked(name, run(lr, seed)) for seed in seeds]
        tried[lr] = (float(np.median([_time(r, target, measure) for r in runs])),
                     float(np.median([_final(r) for r in runs])))

    for lr in grid:
        evaluate(lr)
    bracketed = False
    while True:
        order = sorted(tried)
        best = min(order, key=tried.get)                  # ties: the smaller lr
        i = order.index(best)
        if i == 0:
            nxt = best / step
        elif i == len(order) - 1:
            nxt = best * step
        elif order[i + 1] / best > refine_to:
            nxt = math.sqrt(best * order[i + 1])
        elif best / order[i - 1] > refine_to:
            nxt = math.sqrt(order[i - 1] * best)
        else:
            bracketed = True
            break
        if len(tried) >= max_evals:
            break
        evaluate(nxt)
    scores = tuple((lr, tried[lr][0]) for lr in sorted(tried))
    if not math.isfinite(tried[best][0]):
        low, high = min(tried), max(tried)
        raise ValueError(f"contender {name!r} never met the target: no lr in [{low:.3g}, "
                         f"{high:.3g}] ({len(tried)} tried) had a finite median {measure} time to "
                         f"loss <= {target:g} over tune_seeds={_seeds(seeds)}; the lowest median "
                         f"final loss was {tried[best][1]:.4g} (lr={best:.3g}). Give a larger "
                         f"target, more steps or another lrs range")
    return best, scores, bracketed


def _grid(lrs):
    """The starting grid: 5 log-spaced lrs over a (low, high) range, or the lrs given."""
    allowed = "a (low, high) range or a list of 3 or more different lrs, all > 0"
    if isinstance(lrs, (str, bytes)) or not hasattr(lrs, "__len__"):
        raise checks.bad("lrs", lrs, allowed, TypeError)
    values = sorted({checks.real("lrs", v, positive=True) for v in lrs})
    if len(values) != len(lrs) or len(values) < 2:
        raise checks.bad("lrs", lrs, allowed)
    return [float(v) for v in np.geomspace(*values, COARSE)] if len(values) == 2 else values


# -- one run, measured -----------------------------------------------------------------------
def _time(run, target, measure):
    """The run's time to the target by `measure`; inf when it never got there."""
    t = run.time_to_stay_below(target) if measure == "stay" else run.time_to_reach(target)
    return math.inf if t is None else t


def _final(run):
    """The last scored loss; inf for a run that diverged."""
    losses = np.asarray(run.losses, dtype=float)
    losses = losses[~np.isnan(losses)]
    return math.inf if run.diverged or not losses.size else float(losses[-1])


def _rates(run):
    """(gradients computed, gradients applied) per unit of time: applied are the pushes, computed
    adds the dropped ones (ksync's late gradients)."""
    applied = int(run.trace.pushes_per_worker().sum())
    duration = run.trace.duration or math.nan
    return (applied + len(run.trace.drops)) / duration, applied / duration


# -- paired comparison -----------------------------------------------------------------------
def wilson(successes, n, z=Z95):
    """The Wilson score interval for a proportion: `successes` of `n` (closed form)."""
    if n == 0:
        return 0.0, 1.0
    p, z2 = successes / n, z * z
    centre = (p + z2 / (2 * n)) / (1 + z2 / n)
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / (1 + z2 / n)
    return max(0.0, centre - half), min(1.0, centre + half)


def _ratio(a, b):
    """Time a / time b; 1 when they are equal (both inf: neither met the target)."""
    return 1.0 if a == b else (a / b if b else math.inf)


def _pair(a, b, measure, rng, bootstrap):
    ta, tb = a.times(measure), b.times(measure)
    wins, losses = int((ta < tb).sum()), int((ta > tb).sum())
    ratios = np.array([_ratio(x, y) for x, y in zip(ta, tb)])
    resampled = np.median(ratios[rng.integers(0, ratios.size, (bootstrap, ratios.size))], axis=1)
    low, high = np.quantile(resampled, [0.025, 0.975], method="inverted_cdf")
    return Pair(a.name, b.name, wins, losses, int(ta.size) - wins - losses,
                wilson(wins, wins + losses), float(np.median(ratios)), (float(low), float(high)))


# -- arguments -------------------------------------------------------------------------------
def _runners(problem, contenders, common):
    """{name: function (lr, seed) -> Run}, checked."""
    if not isinstance(contenders, dict) or not contenders:
        raise checks.bad("contenders", contenders, "a non-empty dict {name: dict of aps.simulate "
                         "arguments, or a function (lr, seed) -> Run}", TypeError)
    for given in ("lr", "seed"):
        if given in common:
            raise TypeError(f"race() got {given}={common[given]!r}: the race sets each run's lr "
                            f"(tuned) and seed (tune_seeds, race_seeds) itself")
    runners = {}
    for name, spec in contenders.items():
        if not isinstance(name, str):
            raise checks.bad("contenders", contenders, "a dict whose names are strings", TypeError)
        if callable(spec):
            runners[name] = spec
        elif isinstance(spec, dict):
            fixed = sorted({"lr", "seed"} & set(spec))
            if fixed:
                raise ValueError(f"contenders[{name!r}] sets {', '.join(fixed)}: a contender "
                                 f"leaves lr and seed to the race (it tunes lr, it picks seeds)")
            kwargs = {"progress": False, **common, **spec}
            runners[name] = lambda lr, seed, kw=kwargs: simulate(problem, lr=lr, seed=seed, **kw)
        else:
            raise checks.bad(f"contenders[{name!r}]", spec, "a dict of aps.simulate arguments or "
                             "a function (lr, seed) -> Run", TypeError)
    return runners


def _checked(name, run):
    if not isinstance(run, Run):
        raise TypeError(f"contender {name!r} returned {run!r:.60}: a contender function must "
                        f"return an asyncps Run (what aps.simulate and aps.train return)")
    return run


def _seed_list(name, seeds):
    try:
        values = [checks.integer(name, s, minimum=0) for s in seeds]
    except TypeError:
        raise checks.bad(name, seeds, "a range or list of integer seeds >= 0", TypeError) from None
    if not values or len(set(values)) != len(values):
        raise checks.bad(name, seeds, "a non-empty range or list of different seeds")
    return tuple(values)


def _seeds(seeds):
    seeds = tuple(seeds)
    if len(seeds) > 2 and seeds == tuple(range(seeds[0], seeds[-1] + 1)):
        return f"{seeds[0]}..{seeds[-1]}"
    return ", ".join(map(str, seeds))


def _other(measure):
    return MEASURES[1 - MEASURES.index(measure)]


def _num(x):
    return "never" if x == math.inf else f"{x:.3g}"


def _aligned(rows):
    widths = [max(len(row[k]) for row in rows) for k in range(len(rows[0]))]
    return "\n".join("  ".join(v.ljust(w) for v, w in zip(row, widths)).rstrip() for row in rows)
