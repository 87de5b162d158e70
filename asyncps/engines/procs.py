"""Worker processes, for every engine that has them (processes, rpc): start, watch, tear down.

Children come from multiprocessing's fork server, a clean helper process that imports torch
once (safe from a notebook; each run then starts its children in milliseconds). Where there is
no fork server (Windows) they are spawned: each child starts a fresh Python and imports torch
itself (a second or two per child), and a script must start runs under `if __name__ == "__main__":`. Each child gets
a pipe. `receive` waits on every live child's pipe *and* its process sentinel at once, so a child
that dies without a word is noticed at once. `Children` as a context manager leaves nothing
behind: every child is joined, terminated or killed on the way out, on success or on error.

A child that raises sends its error and traceback (`send_error`); the parent re-raises it with
that traceback attached (`remote_error`).
"""
import pickle
import signal
import sys
import time
import traceback
from multiprocessing.connection import wait

PRELOAD = ["numpy", "torch", "cloudpickle", "asyncps.engines.processes", "asyncps.engines.rpc.world"]


MAIN_GUARD = ("a worker process could not start: each one imports the script that started the run, "
              "and this script starts a run when imported. Put that code under "
              "`if __name__ == \"__main__\":` (a notebook needs nothing), or use engine='threads'")


def unguarded_start():
    """The line of the main script that starts this run as the script is imported, or None.

    Worker processes import the script that started the run (spawn, forkserver), so a run started
    by a line outside `if __name__ == "__main__":` would start again in every worker, after
    re-running everything above it. A notebook, the REPL, `python -c` and a guarded line: None."""
    import ast
    import sys

    main = sys.modules.get("__main__")
    path = getattr(main, "__file__", None)
    frame = sys._getframe(1)
    while frame is not None and not (frame.f_globals is getattr(main, "__dict__", None)
                                     and frame.f_code.co_name == "<module>"
                                     and frame.f_code.co_filename == path):
        frame = frame.f_back
    if path is None or frame is None:
        return None
    line = frame.f_lineno
    try:
        with open(path, encoding="utf-8") as file:
            tree = ast.parse(file.read())
    except (OSError, SyntaxError, UnicodeDecodeError, ValueError):
        return None
    body = tree.body
    while True:                                     # down the statements that hold the line
        node = next((n for n in body if n.lineno <= line <= (n.end_lineno or n.lineno)), None)
        if node is None:
            return line
        if isinstance(node, ast.If) and _is_main_test(node.test):
            return None if any(n.lineno <= line <= n.end_lineno for n in node.body) else line
        body = [n for field in ("body", "orelse", "finalbody", "handlers") for n in getattr(node, field, [])
                if isinstance(n, ast.stmt) or isinstance(n, ast.ExceptHandler)]
        if not body:
            return line


def _is_main_test(test):
    """`__name__ == "__main__"`, either way round."""
    import ast

    if not (isinstance(test, ast.Compare) and len(test.ops) == 1 and isinstance(test.ops[0], ast.Eq)):
        return False
    sides = [test.left, test.comparators[0]]
    return any(isinstance(a, ast.Name) and a.id == "__name__" for a in sides) and \
        any(isinstance(a, ast.Constant) and a.value == "__main__" for a in sides)


def refuse_unguarded(engine):
    """Raise before any worker starts if the main script starts this run outside its main guard."""
    import os
    import sys

    line = unguarded_start()
    if line is not None:
        script = os.path.basename(sys.modules["__main__"].__file__)
        raise RuntimeError(
            f"engine={engine!r} starts worker processes that import {script} again, and its line "
            f"{line} would start this run again in each of them: put the code that starts runs under "
            f"`if __name__ == \"__main__\":` (a notebook needs nothing), or use engine='threads'")


class RemoteTraceback(Exception):
    """The traceback of an error raised inside a worker process."""

    def __str__(self):
        return self.args[0]


def start_method(available=None):
    """'forkserver' where the platform has it (Linux, macOS), else 'spawn' (Windows)."""
    import multiprocessing

    available = multiprocessing.get_all_start_methods() if available is None else available
    return "forkserver" if "forkserver" in available else "spawn"


def context():
    """The multiprocessing context of every engine with worker processes."""
    import torch.multiprocessing as mp

    method = start_method()
    ctx = mp.get_context(method)
    if method == "forkserver":
        ctx.set_forkserver_preload(PRELOAD)
    return ctx


def dumps(what, name="problem"):
    """`what` (a problem defined in a notebook cell too) as bytes for the children, via cloudpickle."""
    import cloudpickle

    try:
        return cloudpickle.dumps(what)
    except Exception as err:                            # noqa: BLE001
        raise TypeError(f"{name}={what!r:.80} cannot be sent to worker processes ({err}). Define its "
                        f"functions at module level, or use engine='threads'") from None


class Children:
    """The children of one run, each with its pipe: `with Children() as c: c.start(...)`."""

    def __init__(self):
        self.ctx, self.procs, self.conns, self.ok = context(), [], [], False

    def start(self, target, name, *args):
        """Start `target(*args, conn)` in a child; returns its index."""
        ours, theirs = self.ctx.Pipe()
        proc = self.ctx.Process(target=target, name=name, daemon=True, args=(*args, theirs))
        try:
            proc.start()
        except (RuntimeError, BrokenPipeError, EOFError) as err:
            # the child re-imports the script that started the run (spawn, forkserver): unguarded,
            # that script starts a run again, and the child or the fork server gives up
            if isinstance(err, RuntimeError) and "bootstrapping phase" not in str(err):
                raise
            raise RuntimeError(MAIN_GUARD) from None
        theirs.close()
        self.procs.append(proc)
        self.conns.append(ours)
        return len(self.procs) - 1

    def receive(self, live, timeout=0.2):
        """[(k, message)] for the live children that said something; message None: k died."""
        handles = {self.conns[k]: k for k in live}
        handles.update({self.procs[k].sentinel: k for k in live})
        said = []
        for handle in wait(list(handles), timeout=timeout):
            k = handles[handle]
            if any(k == j for j, _ in said):
                continue
            try:
                message = self.conns[k].recv() if self.conns[k].poll() else None
            except (EOFError, OSError):
                message = None
            said.append((k, message))
        return said

    def exit_reason(self, k):
        proc = self.procs[k]
        proc.join(0.5)
        code = proc.exitcode
        if code is not None and code < 0:
            return f"killed by signal {-code} ({signal.Signals(-code).name})"
        return f"exited with status {code}"

    def __enter__(self):
        return self

    def __exit__(self, kind, *_):
        self.shutdown(grace=2.0 if kind is None and self.ok else 0.0)

    def shutdown(self, grace):
        """Leave nothing behind: every child joined (terminated, then killed, if it must be)."""
        deadline = time.monotonic() + grace
        for proc in self.procs:
            proc.join(max(0.0, deadline - time.monotonic()))
        for proc in self.procs:
            if proc.is_alive():
                proc.terminate()
        for proc in self.procs:
            proc.join(1.0)
            if proc.is_alive():
                proc.kill()
                proc.join()
        for conn in self.conns:
            conn.close()


def child_setup():
    """What every child does first: die with the run's process, leave Ctrl-C to the parent, one
    torch thread, freed memory kept for the next gradient."""
    signal.signal(signal.SIGINT, signal.SIG_IGN)       # the parent handles Ctrl-C and stops us
    die_with_parent()
    keep_freed_memory()
    import torch

    torch.set_num_threads(1)


def keep_freed_memory():
    """Ask glibc's malloc to keep freed blocks of up to 32 MB in the heap, instead of giving them
    back to the kernel at once.

    Every step of a torch model allocates its gradient anew (a 1e6-parameter model: 4 MB for the
    backward pass, 4 MB for the flat vector). By default glibc returns such blocks to the kernel
    (munmap, or trimming the heap's top) and takes fresh ones the next step, and the kernel must
    fault in and zero every fresh page: on 2 cores a 1e6-parameter worker made 13 % fewer steps
    a second that way. Kept, the next step reuses the same warm pages. Every child of the fork
    server does this, the Hogwild baseline's too. Nothing changes where the C library is not glibc."""
    import ctypes
    import ctypes.util

    if not sys.platform.startswith("linux"):
        return
    try:
        libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6")
        mallopt = libc.mallopt
    except (OSError, AttributeError):
        return
    M_TRIM_THRESHOLD, M_MMAP_THRESHOLD = -1, -3
    mallopt(M_MMAP_THRESHOLD, 32 << 20)                 # blocks up to 32 MB come from the heap
    mallopt(M_TRIM_THRESHOLD, 1 << 30)                  # and the heap keeps up to 1 GB freed


def die_with_parent():
    """On Linux, a child is killed (SIGKILL) as soon as the process that started the run dies, by
    any death: a kernel restarted or killed, even by SIGKILL, which leaves no chance to clean up.

    The kernel stops its children when it can (Children.shutdown, on every ending it sees); this
    is for when it cannot. A child's parent is the fork server, which exits once the kernel is
    gone: it watches a pipe ("alive") whose write end the kernel holds. But each child inherits a
    copy of that write end too, which would keep the fork server, and so the children, alive for
    ever (a paused child sleeping in its loop). So each child asks to get SIGKILL when its parent
    dies (prctl PR_SET_PDEATHSIG), then closes its copy: the kernel's death ends the fork server,
    and that ends every child. A child whose kernel died before it got here ends at once.
    Elsewhere (macOS, Windows) nothing changes: the kernel's own shutdown stops the children."""
    import multiprocessing
    import os
    import sys

    started_by = multiprocessing.parent_process()
    if not sys.platform.startswith("linux") or started_by is None:      # not a child: leave it
        return
    import ctypes
    from multiprocessing import forkserver

    PR_SET_PDEATHSIG = 1                                 # <linux/prctl.h>
    parent = os.getppid()                               # the fork server, or the kernel (spawn)
    ctypes.CDLL(None, use_errno=True).prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    alive = forkserver._forkserver._forkserver_alive_fd  # our copy of the kernel's "alive" pipe
    if alive is not None:
        forkserver._forkserver._forkserver_alive_fd = None
        os.close(alive)
    if os.getppid() != parent or not started_by.is_alive():   # it died before prctl: go now
        os.kill(os.getpid(), signal.SIGKILL)


def send_error(conn, err):
    """Tell the parent what went wrong here, with the traceback."""
    try:
        blob = pickle.dumps(err)
    except Exception:                                   # noqa: BLE001
        blob = None
    try:
        conn.send(("error", blob, traceback.format_exc(), []))
    except (BrokenPipeError, EOFError, OSError):
        pass


def remote_error(where, blob, text):
    err = None
    if blob is not None:
        try:
            err = pickle.loads(blob)
        except Exception:                               # noqa: BLE001
            err = None
    if not isinstance(err, BaseException):
        err = RuntimeError(f"{where} failed:\n{text}")
    err.__cause__ = RemoteTraceback(f'\n"""\n{text}"""')
    err.add_note(f"(raised in {where}; its traceback is above)")
    return err


def loads(blob):
    import cloudpickle

    return cloudpickle.loads(blob)
