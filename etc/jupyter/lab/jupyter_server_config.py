# make lab's JupyterLab server (the Makefile puts this folder first on JUPYTER_CONFIG_PATH; nothing
# else reads it: make demo's Voila reads etc/jupyter/, one level up). It keeps the terminal that
# runs make lab to what the learner must act on, with the URL last, and gives JupyterLab's
# terminals the venv that make lab runs. Config set here wins over ~/.jupyter's for the same keys.
import logging
import os
import shutil
import warnings


def _can_encrypt():
    import zmq
    from jupyter_client.manager import KernelManager
    return "transport_encryption" in KernelManager.class_trait_names() and zmq.has("curve")


# Lines nobody can act on, dropped from the server's log (warnings and errors stay):
#  - "Notebook X is not trusted": every time a notebook is opened or saved (hundreds in a lecture);
#    trust is about showing a notebook's saved HTML and JavaScript, which JupyterLab does anyway
#    once its cells run;
#  - nbgrader's "No nbgrader_config.py file found": only instructors have one (make grade);
#  - tornado's "websocket_ping_timeout ... cannot be longer than the websocket_ping_interval",
#    when a terminal opens: jupyter_server's own defaults, which tornado corrects itself.
NOT_FOR_THE_LEARNER = ("is not trusted", "No nbgrader_config.py file found",
                       "cannot be longer than the websocket_ping_interval")


class QuietForTheLearner(logging.Filter):
    def filter(self, record):
        message = record.getMessage()
        return not any(text in message for text in NOT_FOR_THE_LEARNER)


c.ServerApp.logging_config = {  # noqa: F821 (c: the config object traitlets runs this file with)
    "filters": {"asyncps": {"()": QuietForTheLearner}},
    "handlers": {"console": {"filters": ["asyncps"]}},
}
logging.getLogger("NbGrader").addFilter(QuietForTheLearner())   # nbgrader logs through its own handler

# Voila's import (its server extension, loaded after this file) turns traitlets' DeprecationWarnings
# on for the whole server (Python shows none by default): notebook_shim then warns "ServerApp.token
# config is deprecated" (it reads every attribute of the server; nobody here sets it), and other
# extensions about their own traitlets code. None is the learner's to act on: imported here first,
# Voila's filter is then overruled by this one.
try:
    import voila  # noqa: F401
except ImportError:
    pass
warnings.filterwarnings("ignore", category=DeprecationWarning, module="traitlets")

# The kernels' messages travel over TCP on 127.0.0.1; each kernel otherwise warns, on every start,
# that they are not encrypted. CurveZMQ keys, made per kernel by the server, encrypt them (the
# python3 kernel declares that it supports them; a kernel that does not starts as before).
# (only where jupyter_client has the setting and pyzmq can encrypt: elsewhere as before)
if _can_encrypt():
    c.KernelManager.transport_encryption = "auto"  # noqa: F821

# JupyterLab's terminals: bash reads terminal.bashrc (beside this file) instead of ~/.bashrc, which
# reads the learner's own start-up files and then activates the venv make lab runs ($VIRTUAL_ENV),
# so that `python` and `pip` there are the venv's, as in the notebooks' `!` commands (a login shell
# would reset PATH, and ~/.bashrc may put pyenv's or conda's python first). Another shell ($SHELL
# zsh, fish, ...) starts as JupyterLab starts it, with make lab's PATH (the venv first) unless its
# own start-up files change PATH.
_bash = shutil.which("bash")
if _bash and os.path.basename(os.environ.get("SHELL") or "bash") == "bash":
    c.ServerApp.terminado_settings = {  # noqa: F821
        "shell_command": [_bash, "--rcfile", os.path.join(os.path.dirname(__file__), "terminal.bashrc"), "-i"]}
