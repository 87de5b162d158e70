"""The environment variables a notebook's kernel carries that asyncps reads (standard library only:
asyncps.check imports this where nbformat and the grader are not imported yet)."""

# Set in the environment of the kernel a check (or a grade) runs the notebook in: an aps.check()
# cell in the notebook must not start a check of its own there.
CHECKING = "ASYNCPS_CHECKING"
# The notebook a JupyterLab kernel runs for (jupyter_server's SessionManager.get_kernel_env).
SESSION = "JPY_SESSION_NAME"
