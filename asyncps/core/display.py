"""How a Run or a Trace shows itself in Jupyter: a one-line repr here, pictures from the views.

The core draws nothing (numpy only; it never imports the widgets, not even inside a function).
`Run._repr_html_` and `Trace._repr_html_` ask the renderer registered here. The package registers
one when it is imported (asyncps/__init__.py): the widgets layer's summary
(asyncps/widgets/summary.py), itself imported on the first display. With none registered they
return None, and Jupyter shows the plain repr.
"""
_renderers = []       # at most one: render(run_or_trace) -> HTML text


def register_html(render):
    """Let `render(run_or_trace)` (-> HTML text) draw Runs and Traces in Jupyter; None: nobody."""
    if render is not None and not callable(render):
        raise TypeError(f"render={render!r:.60} is not allowed: render must be a function "
                        f"render(run_or_trace) -> HTML text, or None")
    _renderers[:] = [] if render is None else [render]


def html(run_or_trace):
    """The registered renderer's HTML for `run_or_trace`, or None (Jupyter shows the repr)."""
    return _renderers[0](run_or_trace) if _renderers else None
