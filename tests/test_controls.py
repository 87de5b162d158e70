"""Controls that say what they are (issue 24): every button of the widgets has a tooltip, the
icon-only buttons of Play get a name from the stylesheet beside them (icon_names.py), and the
Playground's batch dropdown shows its value in the browser. No kernel, no browser."""
import ipywidgets as widgets
import pytest

import asyncps as aps
from engines import no_thread_survives  # noqa: F401 (a fixture)
from asyncps.widgets.icon_names import PLAY_CLASS, PLAY_ICONS
from asyncps.widgets.playground import BATCHES

QUAD = aps.problems.Quadratic(curvature=(1.0, 2.0))
BUTTONS = (widgets.Button, widgets.ToggleButton, widgets.Play)


def every_widget(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        yield from every_widget(child)


def a_live_view():
    live = aps.train(QUAD, workers=2, steps=20, live=True)
    live.result()
    view = aps.widgets.LiveView(live)
    assert view.join(timeout=20)
    return view


def the_widgets():
    run = aps.simulate(QUAD, workers=2, steps=8)
    return {"Timeline": aps.widgets.Timeline(run), "ParameterView": aps.widgets.ParameterView(run, QUAD),
            "Playground": aps.widgets.Playground(steps=20), "LiveView": a_live_view()}


@pytest.mark.usefixtures("no_thread_survives")
def test_every_button_has_a_tooltip_and_every_play_a_name_for_each_icon():
    for name, widget in the_widgets().items():
        inside = list(every_widget(widget))
        for button in (w for w in inside if isinstance(w, BUTTONS)):
            assert button.tooltip, f"{name}: {button!r} has no tooltip"
        for play in (w for w in inside if isinstance(w, widgets.Play)):
            assert play.description == ""           # else ipywidgets never shows the tooltip
            assert PLAY_CLASS in play._dom_classes
            styles = [w.value for w in inside if isinstance(w, widgets.HTML) and
                      w.value.startswith("<style>") and w.layout.display == "none"]
            assert len(styles) == 1, f"{name}: no stylesheet naming Play's buttons"
            for icon, (glyph, label) in PLAY_ICONS.items():
                assert f'.{PLAY_CLASS} i.fa-{icon}::before{{content:"{glyph}" / "{label}"}}' in styles[0]


@pytest.mark.usefixtures("no_thread_survives")
def test_a_dropdown_without_a_label_has_a_tooltip_for_its_name():
    view = a_live_view()
    for dropdown in (w for w in every_widget(view) if isinstance(w, widgets.Dropdown)):
        assert dropdown.description or dropdown.tooltip


def test_the_icons_named_are_the_ones_ipywidgets_play_draws():
    assert set(PLAY_ICONS) == {"play", "pause", "stop", "retweet"}     # PlayView's fa-* icons


@pytest.mark.parametrize("batch_size", BATCHES)
def test_the_batch_dropdown_shows_every_allowed_batch_size(batch_size):
    pg = aps.widgets.Playground(batch_size=batch_size, steps=20)
    dropdown = pg.controls["batch_size"]
    assert dropdown.index is not None                 # None: the browser shows a blank dropdown
    assert dropdown.label == ("whole shard" if batch_size is None else str(batch_size))
    assert pg.settings()["batch_size"] == batch_size
    assert f"'batch_size': {batch_size}" in pg.state


def test_choosing_whole_shard_in_the_browser_means_batch_size_none():
    pg = aps.widgets.Playground(batch_size=8, steps=20)
    pg.controls["batch_size"].index = 0               # what the browser sends
    assert pg.controls["batch_size"].label == "whole shard"
    assert pg.settings()["batch_size"] is None and "'batch_size': None" in pg.state


def test_a_batch_size_the_dropdown_does_not_offer_is_named():
    with pytest.raises(ValueError, match=r"batch_size=0 is not allowed: .*one of \(None, 8, 32, 128\)"):
        aps.widgets.Playground(batch_size=0)
