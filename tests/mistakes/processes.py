"""Mistakes in scripts that start real engines with worker processes."""
MISTAKES = [
    dict(name="processes-without-main-guard",
         before="the script's earlier output printed again by each worker, then "
                "'RuntimeError: worker 0 did not start: it exited with status 1'",
         script='''
import asyncps as aps
print("before the run")
run = aps.train(aps.problems.LeastSquares(n=64, dim=3, seed=0), engine="processes", workers=2, steps=10)
''',
         says=["engine='processes'", "line 3", 'if __name__ == "__main__":']),
    dict(name="processes-main-called-without-guard",
         before="'RuntimeError: worker 0 did not start: it exited with status 1'",
         script='''
import asyncps as aps


def main():
    aps.train(aps.problems.LeastSquares(n=64, dim=3, seed=0), engine="processes", workers=2, steps=10)


main()
''',
         says=["line 8", "would start this run again", 'if __name__ == "__main__":']),
]
