# make lab's terminals (jupyter_server_config.py beside this file starts `bash --rcfile THIS -i`):
# what an interactive bash reads, then the venv make lab runs, so that `python`, `pip` and
# `python -m asyncps.check` are the venv's, with "(.venv)" in the prompt.
asyncps_venv="$VIRTUAL_ENV"
[ -f /etc/bash.bashrc ] && . /etc/bash.bashrc
[ -f "$HOME/.bashrc" ] && . "$HOME/.bashrc"
if [ -n "$asyncps_venv" ] && [ -f "$asyncps_venv/bin/activate" ]; then
    . "$asyncps_venv/bin/activate"
fi
unset asyncps_venv
