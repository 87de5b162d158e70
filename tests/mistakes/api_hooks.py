"""Mistakes with a learner's hooks (apply=, average=, gate=, lr_schedule=), the SSP threshold and
the keywords of `aps.simulate`: each gets one last line naming the hook or argument, what was given
and what the server expects. A hook with the wrong signature is refused before the first push; an
error raised inside a hook keeps its type and gets a last line saying which hook, at which push."""

SETUP = '''
import asyncps as aps
problem = aps.problems.LeastSquares(n=64, dim=3, seed=0)
'''


def script(body):
    return SETUP + body.strip() + "\n"


APPLY = "apply(params, version, grad, computed_on, lr)"

MISTAKES = [
    # -- the wrong signature: refused when given, with the signature the server calls ----------
    dict(name="hooks-apply-takes-params-and-grad-only",
         before="TypeError: <lambda>() takes 2 positional arguments but 5 were given",
         script=script("aps.simulate(problem, apply=lambda params, grad: params - 0.1 * grad)"),
         says=["apply=<function <lambda>> is not allowed", "it takes (params, grad)", APPLY,
               "(new_params, new_version, staleness)"]),
    dict(name="hooks-apply-forgets-lr",
         before="TypeError: my_apply() takes 4 positional arguments but 5 were given",
         script=script('''
def my_apply(params, version, grad, computed_on):
    return params - 0.1 * grad, version + 1, version - computed_on
aps.simulate(problem, apply=my_apply)
'''),
         says=["apply=<function my_apply>", "it takes (params, version, grad, computed_on)", APPLY]),
    dict(name="hooks-average-takes-grads-only",
         before="TypeError: <lambda>() takes 1 positional argument but 2 were given",
         script=script('aps.simulate(problem, policy="sync", '
                       'average=lambda grads: sum(grads.values()) / len(grads))'),
         says=["average=<function <lambda>>", "it takes (grads)", "average(grads, workers)"]),
    dict(name="hooks-gate-without-threshold",
         before="TypeError: <lambda>() takes 2 positional arguments but 3 were given",
         script=script('aps.simulate(problem, policy="ssp", max_clocks_ahead=1, '
                       'gate=lambda clock, clocks: clock - min(clocks) <= 1)'),
         says=["gate=<function <lambda>>", "it takes (clock, clocks)",
               "gate(clock, clocks, max_ahead)", "True or False"]),
    dict(name="hooks-lr-schedule-takes-staleness-only",
         before="TypeError: <lambda>() takes 1 positional argument but 2 were given",
         script=script("aps.simulate(problem, lr_schedule=lambda staleness: 0.1 / (staleness + 1))"),
         says=["lr_schedule=<function <lambda>>", "it takes (staleness)",
               "lr_schedule(lr, staleness)"]),

    # -- what a hook returns ------------------------------------------------------------------
    dict(name="hooks-apply-returns-only-params",
         before="TypeError: apply returned array([-0.14407599, -0.15814106, -0.14249989, "
                "-0.00175462,  : it must return a tuple (new_params, new_version, staleness)",
         script=script('''
problem = aps.problems.LeastSquares(n=64, dim=10, seed=0)
aps.simulate(problem, apply=lambda params, version, grad, computed_on, lr: params - lr * grad)
'''),
         says=["apply returned an array of shape (10,)", "new parameters alone",
               "return new_params, version + 1, version - computed_on"]),
    dict(name="hooks-apply-returns-a-list",
         before="TypeError: apply returned [array([-0.14407599, -0.15814106, -0.14249989, "
                "-0.00175462, : it must return a tuple (new_params, new_version, staleness)",
         script=script('''
problem = aps.problems.LeastSquares(n=64, dim=10, seed=0)
def my_apply(params, version, grad, computed_on, lr):
    return [params - lr * grad, version + 1, version - computed_on]
aps.simulate(problem, apply=my_apply)
'''),
         says=["apply returned a list of 3 items", "must return a tuple",
               "return new_params, version + 1"]),
    dict(name="hooks-average-returns-a-list",
         before="ValueError: average returned an array of shape (1, 3): the parameters have shape "
                "(3,) (or return None while the barrier is closed)",
         script=script('''
def my_average(grads, workers):
    return list(grads.values())
aps.simulate(problem, policy="sync", average=my_average)
'''),
         says=["average returned a list of 1 item", "shaped like the parameters (3,)", "None"]),
    dict(name="hooks-average-returns-one-number",
         before="ValueError: average returned an array of shape (): the parameters have shape (3,) "
                "(or return None while the barrier is closed), 7 frames into asyncps",
         script=script('''
import numpy as np
def my_average(grads, workers):
    return None if len(grads) < workers else np.mean(list(grads.values()))
aps.simulate(problem, policy="sync", average=my_average)
'''),
         says=["average returned an array of shape () (one number)", "gradients of shape (3,)",
               "my_average(grads, workers) must return one gradient of shape (3,)", "axis=0"]),
    dict(name="hooks-gate-forgets-return",
         before="TypeError: gate returned None: it must return True or False",
         script=script('''
def my_gate(clock, clocks, max_ahead):
    clock - min(clocks) <= max_ahead
aps.simulate(problem, policy="ssp", max_clocks_ahead=1, gate=my_gate, compute_times=[1, 3])
'''),
         says=["gate returned None", "clock 0", "True or False", "return"]),
    dict(name="hooks-lr-schedule-goes-to-zero",
         before="ValueError: lr_schedule(0.1, 1) returned 0.0: a learning rate must be a finite "
                "number > 0",
         script=script('aps.simulate(problem, workers=3, compute_times=[1, 1, 3], '
                       'lr_schedule=lambda lr, staleness: lr - 0.1 * staleness)'),
         says=["lr_schedule(0.1, 1) returned 0.0", "stale by 1", "> 0", "lr / (staleness + 1)"]),

    # -- an error raised inside a hook: its own type, and which hook at which push -------------
    dict(name="hooks-apply-raises-inside-the-run",
         before="ZeroDivisionError: division by zero",
         script=script('''
def my_apply(params, version, grad, computed_on, lr):
    scale = 1 / (version - computed_on)          # a division by zero on a fresh push
    return params - scale * lr * grad, version + 1, version - computed_on
aps.simulate(problem, apply=my_apply)
'''),
         says=["ZeroDivisionError came from your apply=", "push that was to make v1",
               "computed on v0"]),
    dict(name="hooks-gate-raises-inside-the-run",
         before="IndexError: list index out of range",
         script=script('''
def my_gate(clock, clocks, max_ahead):
    return clock - clocks[2] <= max_ahead           # only 2 workers: clocks[2] does not exist
aps.simulate(problem, policy="ssp", max_clocks_ahead=1, gate=my_gate)
'''),
         says=["IndexError came from your gate=", "clock 0", "clocks=[0, 0]", "max_ahead=1"]),

    # -- a hook where the policy has no use for it --------------------------------------------
    dict(name="hooks-apply-with-sync",
         before="ValueError: apply= is not allowed with policy='sync': a sync server averages a "
                "round (use average=); apply= is the asynchronous push (policy 'async' or 'ssp')",
         script=script('''
def my_apply(params, version, grad, computed_on, lr):
    return params - lr * grad, version + 1, version - computed_on
aps.simulate(problem, policy="sync", apply=my_apply)
'''),
         says=["apply= is not allowed with policy='sync'", "average="]),
    dict(name="hooks-gate-with-async",
         before="ValueError: gate= is not allowed with policy='async': an async server never holds "
                "a worker back (use policy='ssp')",
         script=script('''
def my_gate(clock, clocks, max_ahead):
    return clock - min(clocks) <= max_ahead
aps.simulate(problem, gate=my_gate)
'''),
         says=["gate= is not allowed with policy='async'", "policy='ssp'"]),

    # -- the SSP threshold, the lr schedule and the keywords of simulate -----------------------
    dict(name="hooks-threshold-with-every-policy",
         before="ValueError: max_clocks_ahead=1 is not allowed with policy='sync': it is the SSP "
                "threshold, used only with policy='ssp'",
         script=script('''
for policy in aps.POLICIES:
    aps.simulate(problem, policy=policy, max_clocks_ahead=1)
'''),
         says=["max_clocks_ahead=1 is not allowed with policy='sync'", "SSP threshold",
               "leave max_clocks_ahead out"]),
    dict(name="hooks-threshold-without-ssp",
         before="ValueError: max_clocks_ahead=2 is not allowed with policy='async': it is the SSP "
                "threshold, used only with policy='ssp'",
         script=script("aps.simulate(problem, max_clocks_ahead=2)"),
         says=["max_clocks_ahead=2 is not allowed with policy='async'", "SSP threshold",
               "use policy='ssp'"]),
    dict(name="hooks-lr-schedule-is-a-number",
         before="TypeError: lr_schedule=0.05 is not allowed: lr_schedule must be one of "
                "'constant', 'divide_by_staleness', 'a function rate(lr, staleness)'",
         script=script("aps.simulate(problem, lr_schedule=0.05)"),
         says=["lr_schedule=0.05 is not allowed", "pass lr=0.05"]),
    dict(name="hooks-misspelled-learning-rate",
         before="TypeError: simulate() got an unexpected keyword argument 'lerning_rate'; allowed: "
                "workers, policy, max_clocks_ahead, lr, lr_schedule, momentum, steps, partition, "
                "batch_size, fetch_every, push_every, seed, apply, average, gate, loss_every, "
                "trace_limit, compute_times, jitter, comm_delay",
         script=script("aps.simulate(problem, lerning_rate=0.1)"),
         says=["'lerning_rate'", "did you mean lr=?"]),
    dict(name="hooks-misspelled-max-clocks-ahead",
         before="TypeError: simulate() got an unexpected keyword argument 'max_clock_ahead'; "
                "allowed: workers, policy, max_clocks_ahead, lr, lr_schedule, momentum, steps, "
                "partition, batch_size, fetch_every, push_every, seed, apply, average, gate, "
                "loss_every, trace_limit, compute_times, jitter, comm_delay",
         script=script('aps.simulate(problem, policy="ssp", max_clock_ahead=1)'),
         says=["'max_clock_ahead'", "did you mean max_clocks_ahead=?"]),
]
