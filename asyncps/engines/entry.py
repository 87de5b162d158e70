"""What the entry points (`simulate`, `train`) share: their signature is RunConfig's fields.

`help(aps.simulate)` and Jupyter's Shift-Tab then show every argument and its default, and the
list is written once, in asyncps/core/config.py.
"""
import inspect
from dataclasses import fields

from ..core.config import RunConfig, argument_names


def signature(entry, before=(), after=()):
    """`inspect.Signature` for an entry point: what help() and Jupyter's Shift-Tab show."""
    defaults = {f.name: f.default for f in fields(RunConfig)}
    defaults["engine"] = "threads"
    params = [inspect.Parameter(name, inspect.Parameter.POSITIONAL_OR_KEYWORD) for name in before]
    params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=defaults[name])
               for name in argument_names(entry)]
    params += [inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default)
               for name, default in after]
    return inspect.Signature(params)

