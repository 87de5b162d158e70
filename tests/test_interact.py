"""aps.widgets.interactive: a plain function behind controls, with a picture for first sight."""
import ipywidgets as widgets
import pytest
from IPython.display import HTML

import asyncps as aps
from asyncps.widgets.interact import control_svg, result_html
from asyncps.widgets.picture import label_of, svgs_in


def others_wait(slowdown=4.0):
    return f"the others wait {1 - 1 / slowdown:.0%}"


def test_the_controls_start_at_the_defaults_and_the_result_follows_them():
    box = aps.widgets.interactive(others_wait, slowdown=(1.0, 10.0, 0.5))
    slider = box.controls["slowdown"]
    assert isinstance(slider, widgets.FloatSlider) and slider.value == 4.0
    assert (slider.min, slider.max, slider.step, slider.description) == (1.0, 10.0, 0.5, "slowdown")
    assert box.result == "the others wait 75%" and "75%" in box.output.value
    slider.value = 2.0
    assert box.result == "the others wait 50%" and "50%" in box.output.value
    assert repr(box) == "interactive(others_wait, slowdown=2.0)"


def test_its_picture_shows_where_the_controls_stand_and_the_result():
    box = aps.widgets.interactive(others_wait, slowdown=(1.0, 10.0, 0.5))
    box.controls["slowdown"].value = 8.0
    html = box._repr_mimebundle_()["text/html"]
    assert "<svg" not in html and "the others wait 88%" in html
    [picture] = svgs_in(html)
    assert label_of(picture) == "slowdown: a slider from 1 to 10, at 8"
    assert ">8.00<" in picture or ">8<" in picture or ">8.0<" in picture


def test_a_picture_result_is_shown_as_images():
    def histogram(workers=2):
        return aps.widgets.Picture(aps.widgets.histogram_svg([workers, 1]))
    box = aps.widgets.interactive(histogram, workers=(1, 4))
    assert len(svgs_in(box.output.value)) == 1 and "<svg" not in box.output.value
    shown = result_html(HTML('<p>x</p><svg width="2" height="2"><svg width="1" height="1"></svg></svg>'))
    assert shown.startswith("<p>x</p><img") and "<svg" not in shown and len(svgs_in(shown)) == 1


def test_dropdowns_and_checkboxes_have_pictures_too():
    def pick(policy="async", on=True):
        return f"{policy} {on}"
    box = aps.widgets.interactive(pick, policy=["sync", "async"], on=True)
    assert box.result == "async True"
    labels = [label_of(control_svg(c)) for c in box.controls.values()]
    assert labels == ["policy: async", "on: True"]


@pytest.mark.parametrize("call, match", [
    (lambda: aps.widgets.interactive("not a function", x=(0, 1)), "function="),
    (lambda: aps.widgets.interactive(others_wait), "controls: give at least one"),
    (lambda: aps.widgets.interactive(others_wait, slow=(1, 2)), "slow=.*arguments are slowdown"),
    (lambda: aps.widgets.interactive(others_wait, slowdown=object()), "slowdown=.*slider"),
])
def test_mistakes_are_named(call, match):
    with pytest.raises((TypeError, ValueError), match=match):
        call()
