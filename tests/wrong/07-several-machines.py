"""Plausible wrong answers to assignment 07 (several machines); see tests/wrong/README.md."""
WRONG = [
    dict(cell="predict-gain", loses=["check-predict-gain"],
         why="four times the gradients per push, as if messages were free",
         code='''
predicted_gain = 4
'''),
    dict(cell="predict-gain", loses=["check-predict-gain"],
         why="counts one message per push instead of a pull and a push",
         code='''
predicted_gain = (4 / (4 + 1)) / (1 / (1 + 1))
'''),
    dict(cell="gradients-per-time", loses=["check-gradients-per-time"],
         why="one message per iteration, not a pull and a push",
         code='''
def gradients_per_time(workers, compute, comm_delay, push_every=1):
    # wrong: one message per iteration, not a pull and a push
    return workers * push_every / (push_every * compute + comm_delay)
'''),
    dict(cell="gradients-per-time", loses=["check-gradients-per-time"],
         why="forgets the workers: the rate of one worker",
         code='''
def gradients_per_time(workers, compute, comm_delay, push_every=1):
    return push_every / (push_every * compute + 2 * comm_delay)
'''),
    dict(cell="gradients-per-time", loses=["check-gradients-per-time"],
         why="pays the two messages for every gradient, not once per push_every gradients",
         code='''
def gradients_per_time(workers, compute, comm_delay, push_every=1):
    return workers / (compute + 2 * comm_delay)
'''),
    dict(cell="seconds-per-push", loses=["check-seconds-per-push"],
         why="returns 0.0 for a trace without pushes instead of None",
         code='''
def seconds_per_push(trace):
    return trace.duration / len(trace.pushes) if trace.pushes else 0.0
'''),
    dict(cell="seconds-per-push", loses=["check-seconds-per-push"],
         why="divides by every message (pulls too), not by the pushes",
         code='''
def seconds_per_push(trace):
    if not trace.pushes:
        return None
    return trace.duration / (len(trace.pushes) + len(trace.pulls))
'''),
    dict(cell="choose-push-every", loses=["check-choose-push-every"],
         why="takes the model's n = 12 as is: the jittered compute times are slower on average, so the "
             "measured throughput stays below 3.0",
         code='''
chosen_push_every = 12
'''),
    dict(cell="choose-push-every", loses=["check-choose-push-every"],
         why="as much throughput as possible: the copies drift apart and the loss blows up",
         code='''
chosen_push_every = 40
'''),
    dict(cell="choose-push-every", loses=["check-choose-push-every"],
         why="no local steps: the drift is tiny but two messages per gradient cost most of the time",
         code='''
chosen_push_every = 1
'''),
]
