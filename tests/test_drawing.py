"""How the pictures are drawn: round time ticks, a text alternative on every SVG, curves told apart
without colour, text colours that follow JupyterLab's theme and reach WCAG AA contrast (4.5:1) on
the light and the dark theme, and a Playground that fits a narrow output area.

No browser here: the invariants are checked on the SVG and HTML the render functions return.
Contrast is computed from the colours as each theme resolves them: outside JupyterLab (the
fallbacks, on white), and JupyterLab 4's light and dark themes (their variables read from the
installed theme CSS, or the values copied below when JupyterLab is not installed).
"""
import math
import re
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import ipywidgets as widgets
import pytest

import asyncps as aps
from asyncps.core.events import Lost
from asyncps.core.trace import Trace
from asyncps.widgets import Playground, Timeline
from asyncps.widgets import render_charts as rc
from asyncps.widgets import render_live as rl
from asyncps.widgets import render_params as rp
from asyncps.widgets import render_timeline as rt
from asyncps.widgets.picture import stack_svg
from asyncps.widgets.summary import run_html, trace_html
from asyncps.widgets.svg import BG, COLORS, FIT_STYLE, INKS, hex_color, nice_ticks, resolve

NS = "{http://www.w3.org/2000/svg}"
QUAD = aps.problems.Quadratic(curvature=[1.0, 4.0], x0=[1.0, 1.0])
AA = 4.5
# JupyterLab 4.6, theme-{light,dark}-extension/index.css: the variables these pictures use
COPIED = {"JupyterLab light": {"--jp-layout-color0": "white", "--jp-ui-font-color1": "rgba(0,0,0,.87)",
                               "--jp-ui-font-color2": "rgba(0,0,0,.54)", "--jp-border-color2": "#e0e0e0",
                               "--jp-content-font-color0": "#000"},
          "JupyterLab dark": {"--jp-layout-color0": "#111", "--jp-ui-font-color1": "rgba(255,255,255,.87)",
                              "--jp-ui-font-color2": "rgba(255,255,255,.54)", "--jp-border-color2": "#424242",
                              "--jp-content-font-color0": "#fff"}}
# the output area of a notebook in JupyterLab 4.6, 700 px wide with the file browser open (measured
# in Chromium: 332 px; 568 px at 1000, 848 px at 1280)
OUTPUT_AREA_AT_700 = 332


def jupyterlab_theme(name):
    """The --jp-* variables of an installed JupyterLab theme, else the copied ones."""
    folder = "theme-light-extension" if "light" in name else "theme-dark-extension"
    css = Path(sys.prefix, "share", "jupyter", "lab", "themes", "@jupyterlab", folder, "index.css")
    if not css.exists():
        return COPIED[name]
    found = {}
    for key, value in re.findall(r"(--jp-[\w-]+)\s*:\s*([^;}]+)", css.read_text()):
        found.setdefault(key, value.strip())
    return found


THEMES = {"outside JupyterLab": {}, "JupyterLab light": jupyterlab_theme("JupyterLab light"),
          "JupyterLab dark": jupyterlab_theme("JupyterLab dark")}


def luminance(rgb):
    def channel(c):
        c = c / 255
        return c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4
    r, g, b = (channel(c) for c in rgb[:3])
    return 0.2126 * r + 0.7152 * g + 0.0722 * b


def over(color, background):
    """`color` (r, g, b, alpha) painted on an opaque background."""
    a = color[3]
    return tuple(color[i] * a + background[i] * (1 - a) for i in range(3))


def contrast(a, b):
    hi, lo = sorted((luminance(a), luminance(b)), reverse=True)
    return (hi + 0.05) / (lo + 0.05)


def test_contrast_is_computed_as_wcag_defines_it():
    assert contrast((0, 0, 0), (255, 255, 255)) == pytest.approx(21.0)
    assert contrast((118, 118, 118), (255, 255, 255)) == pytest.approx(4.54, abs=0.01)   # #767676
    assert over((255, 255, 255, 0.5), (0, 0, 0)) == (127.5, 127.5, 127.5)


# ---- the pictures ------------------------------------------------------------------------------

def start_here():
    """The run of 00-start-here (its axis read -0.08, 0.98, 2.04, 3.1, 4.16)."""
    return aps.simulate(QUAD, workers=2, policy="async", lr=0.1, steps=6, compute_times=[1, 1.5])


def policies(steps=40):
    return {p: aps.simulate(QUAD, workers=3, policy=p, max_clocks_ahead=1 if p == "ssp" else None,
                            lr=0.1, steps=steps) for p in ("sync", "async", "ssp")}


def pictures():
    """{name: svg} — every kind of picture the render functions draw, at telling frames."""
    out = {}
    run = aps.simulate(QUAD, workers=4, policy="async", lr=0.1, steps=30, compute_times=[1, 1, 1, 3])
    model = rt.TimelineModel(run.trace)
    stale = model.first_stale_push()
    for frame in (0, stale, stale + 3, model.frames - 1):
        out[f"timeline async frame {frame}"] = rt.timeline_svg(model, frame)
    sync = aps.simulate(QUAD, workers=3, policy="sync", lr=0.1, steps=9, compute_times=[1, 2, 3])
    smodel = rt.TimelineModel(sync.trace)
    waits = [i for i, e in enumerate(smodel.events) if e.kind == "wait"]
    out["timeline sync, a wait"] = rt.timeline_svg(smodel, waits[1])
    lost = Trace(events=run.trace.events + [Lost(worker=1, time=model.duration, reason="killed")],
                 meta=run.trace.meta)
    lmodel = rt.TimelineModel(lost)
    out["timeline, a lost worker"] = rt.timeline_svg(lmodel, lmodel.frames - 1)
    pmodel = rp.ParameterModel(run, QUAD, model)
    out["parameter space, a stale push"] = rp.params_svg(pmodel, stale)
    out["parameter space, frame 0"] = rp.params_svg(pmodel, 0)
    runs = policies()
    out["loss per version"] = rc.loss_curves(runs)
    out["loss per time"] = rc.loss_curves(runs, by="time")
    out["histogram"] = rc.histogram_svg(runs["async"].trace.staleness_histogram())
    out["histogram, empty"] = rc.histogram_svg([0])
    out["lines, empty"] = rc.lines_svg([("x", [1.0], [float("nan")], "#000000")], "nothing", "v")
    out["accuracy, linear"] = rc.lines_svg([("a", [0, 1, 2], [0.5, 0.7, 0.9], rc.PALETTE[0])],
                                           "accuracy per server version", "server version",
                                           ylabel="accuracy", log_y=False)
    state = {"version": len(run.trace.losses) - 1, "pushes": 30, "lr": 0.1, "paused": False,
             "running": False, "loss": run.trace.losses[-1]}
    live = rl.live_svg(run.trace, state, ended="finished")
    for k, nested in enumerate(ET.fromstring(live).findall(f"{NS}svg")):
        out[f"live part {k}"] = ET.tostring(nested, encoding="unicode")
    return out


@pytest.fixture(scope="module")
def drawn():
    return pictures()


def axis_ticks(svg):
    """The tick labels under a timeline: the texts on the line of its "time" label."""
    texts = list(ET.fromstring(svg).iter(f"{NS}text"))
    label = next(t for t in texts if t.text in ("time", "time (s)"))
    return [t.text for t in texts if t.get("y") == label.get("y") and t is not label]


def assert_round(labels, start_at_zero):
    values = [float(v) for v in labels]
    assert 3 <= len(values) <= 10, labels
    assert all(v >= 0 for v in values), f"a negative tick: {labels}"
    assert all(len(v) <= 6 for v in labels), f"a tick too long to read: {labels}"
    steps = {round(b - a, 9) for a, b in zip(values, values[1:])}
    assert len(steps) == 1, f"ticks not evenly spaced: {labels}"
    step = steps.pop()
    mantissa = step / 10 ** math.floor(math.log10(step))
    assert round(mantissa, 6) in (1, 2, 2.5, 5), f"step {step} is not 1, 2, 2.5 or 5 × 10^k: {labels}"
    assert all(abs(v / step - round(v / step)) < 1e-6 for v in values), f"not multiples: {labels}"
    if start_at_zero:
        assert values[0] == 0, f"a trace that starts at 0 has its first tick at 0: {labels}"


@pytest.mark.parametrize("scale", [1e-3, 1.0, 37.0])
def test_a_whole_trace_s_time_axis_has_round_ticks_from_0(scale):
    run = aps.simulate(QUAD, workers=2, policy="async", lr=0.1, steps=6,
                       compute_times=[1 * scale, 1.5 * scale])
    model = rt.TimelineModel(run.trace)
    assert model.window(0)[0] < 0 < model.window(0)[1]        # the whole trace is in the window
    for frame in range(model.frames):
        assert_round(axis_ticks(rt.timeline_svg(model, frame)), start_at_zero=True)
    assert axis_ticks(rt.timeline_svg(rt.TimelineModel(start_here().trace), 8)) == [
        "0", "1", "2", "3", "4"]


def test_a_scrolling_window_and_a_live_window_have_round_ticks_never_negative():
    run = aps.simulate(QUAD, workers=4, policy="ssp", max_clocks_ahead=1, lr=0.05, steps=200,
                       compute_times=[1, 1.3, 2, 3.5], jitter=0.3, seed=2)
    model = rt.TimelineModel(run.trace)
    assert model.window(model.frames - 1)[0] > 0             # the window has moved on
    for frame in range(0, model.frames, 97):
        t0, t1 = model.window(frame)
        labels = axis_ticks(rt.timeline_svg(model, frame))
        assert_round(labels, start_at_zero=t0 <= 0)
        assert all(t0 <= float(v) <= t1 for v in labels)
    window = rl.WindowModel(run.trace, 40)
    assert_round(axis_ticks(rt.timeline_svg(window, window.frames - 1)), start_at_zero=False)


def test_nice_ticks_are_multiples_of_a_round_step():
    assert nice_ticks(0, 4.16, 5) == [0, 1, 2, 3, 4]
    assert nice_ticks(0, 0.0123, 5) == [0, 0.0025, 0.005, 0.0075, 0.01]
    assert nice_ticks(3, 7.2, 5, integer=True) == [3, 4, 5, 6, 7]
    assert nice_ticks(0, 1, 100, integer=True) == [0, 1]
    with pytest.raises(ValueError, match="lo=1, hi=0"):
        nice_ticks(1, 0)


def test_a_loss_chart_has_round_version_ticks_from_0_and_decades_on_its_log_axis():
    svg = rc.loss_curves(policies(steps=60))
    texts = list(ET.fromstring(svg).iter(f"{NS}text"))
    x_labels = [t.text for t in texts if t.get("font-size") == "9" and t.get("text-anchor") == "middle"]
    assert_round(x_labels, start_at_zero=True)
    y_labels = [float(t.text) for t in texts if t.get("text-anchor") == "end" and t.get("font-size") == "9"]
    assert len(y_labels) >= 2 and all(math.log10(v) == round(math.log10(v)) for v in y_labels)


# ---- words -------------------------------------------------------------------------------------

def assert_labelled(svg, what):
    root = ET.fromstring(svg)
    assert root.get("role") == "img", f"{what}: no role=img"
    assert root.get("aria-label"), f"{what}: no aria-label"
    title = root.find(f"{NS}title")
    assert title is not None and title.text == root.get("aria-label"), f"{what}: no <title>"
    return title.text


def test_every_picture_has_a_title_and_an_aria_label(drawn):
    for name, svg in drawn.items():
        assert_labelled(svg, name)
    run = start_here()
    model = rt.TimelineModel(run.trace)
    frame = model.first_stale_push()
    said = assert_labelled(rt.timeline_svg(model, frame), "timeline")
    assert rt.caption(model, frame) in said                   # the caption, as text
    runs = policies()
    assert {"sync", "async", "ssp"} <= set(re.findall(r"\b(sync|async|ssp):", assert_labelled(
        rc.loss_curves(runs), "loss chart")))
    assert "mean staleness" in assert_labelled(rc.histogram_svg([3, 5, 1]), "histogram")
    html = run_html(runs["async"]) + trace_html(runs["sync"].trace) + rt.static_html(model)
    for svg in re.findall(r"<svg.*?</svg>", html, re.S):
        assert_labelled(svg, "html")
    assert f"{rt.caption(model, frame)}</p>" in rt.static_html(model, frame)


def test_a_stack_of_pictures_is_labelled_and_keeps_each_picture_s_title():
    pg = Playground(steps=30)
    for svg in (pg.static_svg(), rl.live_svg(start_here().trace, {"version": 6, "pushes": 6, "lr": 0.1,
                                                                  "paused": False, "running": True})):
        root = ET.fromstring(svg)
        assert root.get("role") == "img" and root.get("aria-label")
        parts = root.findall(f"{NS}svg")
        assert parts and all(p.find(f"{NS}title") is not None for p in parts)
    untitled = '<svg xmlns="http://www.w3.org/2000/svg" width="10" height="10"></svg>'
    assert ET.fromstring(stack_svg([[untitled]], title="x")).get("aria-label") == "x"


# ---- without colour ----------------------------------------------------------------------------

def marks_of(svg):
    """{colour: (dash patterns, marker shapes)} of a chart's curves (a circle, or a polygon named
    by its corners relative to its centre)."""
    found = {}
    for el in ET.fromstring(svg).iter():
        tag = el.tag.removeprefix(NS)
        if tag == "polyline":
            found.setdefault(el.get("stroke"), (set(), set()))[0].add(el.get("stroke-dasharray"))
        elif tag == "circle" and el.get("fill") != "none":
            found.setdefault(el.get("fill"), (set(), set()))[1].add("circle")
        elif tag == "path" and el.get("fill") not in (None, "none"):
            pts = [tuple(map(float, p.split(","))) for p in re.findall(r"[-\d.]+,[-\d.]+", el.get("d"))]
            cx, cy = (sum(p[i] for p in pts) / len(pts) for i in (0, 1))
            scale = max(math.hypot(x - cx, y - cy) for x, y in pts)
            shape = tuple(sorted((round((x - cx) / scale, 1), round((y - cy) / scale, 1)) for x, y in pts))
            found.setdefault(el.get("fill"), (set(), set()))[1].add(shape)
    return {c: (frozenset(d), frozenset(m)) for c, (d, m) in found.items() if m}


@pytest.mark.parametrize("by", ["version", "time"])
def test_each_curve_of_a_loss_chart_has_its_own_dash_or_marker(by):
    runs = policies()
    curves = marks_of(rc.loss_curves(runs, by=by))
    assert len(curves) == 3
    signatures = list(curves.values())
    assert len(set(signatures)) == 3, f"two curves differ only in colour: {curves}"
    assert all(len(dashes) == 1 and len(shapes) == 1 for dashes, shapes in signatures)
    many = {f"run {k}": runs["async"] for k in range(6)}          # more curves than policies
    assert len(set(marks_of(rc.loss_curves(many)).values())) == 6


def test_async_and_ssp_keep_their_style_in_every_chart():
    one = marks_of(rc.loss_curves({"ssp": policies()["ssp"]}))
    three = marks_of(rc.loss_curves(policies()))
    assert one[rc.POLICY_COLORS["ssp"]] == three[rc.POLICY_COLORS["ssp"]]


# ---- colours -----------------------------------------------------------------------------------

def painted(el, attribute):
    """An element's colour: its style's (the themed one) where it has one, else the attribute."""
    style = dict(part.split(":", 1) for part in filter(None, (el.get("style") or "").split(";")))
    return style.get(attribute, el.get(attribute))


def backgrounds(svg):
    """(text element, the colour behind its middle): the last rect drawn before it that covers it,
    else the picture's background."""
    rects, out = [], []
    for el in ET.fromstring(svg).iter():
        tag = el.tag.removeprefix(NS)
        if tag == "rect" and painted(el, "fill") not in (None, "none"):
            box = [float(el.get(k, 0)) for k in ("x", "y", "width", "height")]
            rects.append((box, painted(el, "fill")))
        elif tag == "text":
            size = float(el.get("font-size") or 11)
            shift = {"start": size / 2, "end": -size / 2}.get(el.get("text-anchor"), 0.0)
            x, y = float(el.get("x")) + shift, float(el.get("y")) - 0.35 * size
            behind = [fill for (bx, by, bw, bh), fill in rects if bx <= x <= bx + bw and by <= y <= by + bh]
            out.append((el, behind[-1] if behind else BG))
    return out


def test_text_colours_follow_the_theme_and_their_fallback_is_the_light_look(drawn):
    themed = re.compile(r"var\(--[\w-]+,\s*#[0-9a-fA-F]{3,6}\)")
    for name, svg in drawn.items():
        for el, behind in backgrounds(svg):
            color = painted(el, "fill")
            if "(" not in behind:                     # on a fixed colour (a compute bar): fixed text
                assert color == COLORS_ON_FIXED.get(behind), f"{name}: {el.text!r} on {behind}"
                continue
            assert themed.search(color or ""), f"{name}: text {el.text!r} has colour {color!r}"
        for el in ET.fromstring(svg).iter():
            for attribute in ("fill", "stroke"):
                value = painted(el, attribute)
                if value and "(" in value:
                    assert el.get(attribute) == hex_color(value), (name, el.tag, value)


COLORS_ON_FIXED = {COLORS["compute"]: "#ffffff"}


@pytest.mark.parametrize("theme", sorted(THEMES))
def test_every_text_reaches_aa_contrast_on_what_is_behind_it(drawn, theme):
    values, weakest = THEMES[theme], (99.0, "")
    page = over(resolve(BG, values), (255, 255, 255))
    for name, svg in drawn.items():
        for el, behind in backgrounds(svg):
            ground = over(resolve(behind, values), page)
            ratio = contrast(over(resolve(painted(el, "fill"), values), ground), ground)
            weakest = min(weakest, (ratio, f"{name}: {el.text!r}"))
            assert ratio >= AA, f"{theme}, {name}: {el.text!r} has contrast {ratio:.2f} < {AA}"
    print(f"{theme}: the weakest text contrast is {weakest[0]:.2f}:1 ({weakest[1]})")


@pytest.mark.parametrize("theme", sorted(THEMES))
def test_messages_in_html_reach_aa_contrast(theme):
    values = THEMES[theme]
    page = over(resolve(BG, values), (255, 255, 255))
    pg = Playground(steps=30)
    pg._say("a note")
    note = pg.message.value
    pg._say("an error", error=True)
    error = pg.message.value
    diverged = run_html(aps.simulate(QUAD, workers=4, policy="async", lr=1.9, steps=400))
    for html in (note, error, diverged):
        words = re.sub(r'<img\b[^>]*>', "", html)          # the pictures are checked on their own
        colors = re.findall(r"color:([^;\"]+(?:\([^\"]*?\)\))?)", words)
        assert len(colors) == 2 and colors[0] == hex_color(colors[1]), html   # fallback, then themed
        assert contrast(over(resolve(colors[1], values), page), page) >= AA


def test_inks_differ_between_themes_but_stay_the_same_hue():
    light, dark = THEMES["JupyterLab light"], THEMES["JupyterLab dark"]
    for name, color in INKS.items():
        a, b = resolve(color, light), resolve(color, dark)
        assert luminance(a) < luminance(b), f"{name} ink is not lighter on the dark theme"


# ---- width -------------------------------------------------------------------------------------

def walk(widget):
    yield widget
    for child in getattr(widget, "children", ()):
        if not isinstance(child, Timeline):                # the Timeline's own row: timeline.py
            yield from walk(child)


def px(value):
    return float(value[:-2]) if value and value.endswith("px") else 0.0


def test_the_playground_s_rows_wrap_and_its_pictures_shrink_to_the_output_area():
    pg = Playground(steps=30)
    for box in walk(pg):
        if isinstance(box, widgets.HBox):
            natural = sum(px(c.layout.width) for c in box.children)
            flow = box.layout.flex_flow or ""
            assert "wrap" in flow or natural <= OUTPUT_AREA_AT_700, box
        assert px(box.layout.width) <= OUTPUT_AREA_AT_700, box
    charts = pg.children[-1]
    assert "wrap" in charts.layout.flex_flow and len(charts.children) == 3
    assert "max-width:100%" in FIT_STYLE and "height:auto" in FIT_STYLE
    for chart in charts.children:
        root = ET.fromstring(chart.value)
        assert "asyncps-svg" in root.get("class").split() and root.get("viewBox")
        assert FIT_STYLE in chart.value                   # it shrinks to the output area
    assert FIT_STYLE in pg.timeline.view.value
    static = pg._repr_mimebundle_()["text/html"]
    row = re.search(r'<div style="([^"]*flex-wrap:wrap[^"]*)">(<img[^>]*max-width:100%)', static)
    assert row, "the static charts sit in a row that wraps, each no wider than the output area"


def test_a_picture_nested_in_another_is_not_resized_by_the_rule():
    rule = re.search(r"<style>(.*?)\{", FIT_STYLE)[1]
    assert rule.startswith(":not(svg)>")                    # only pictures whose parent is HTML


def test_a_version_label_is_drawn_inside_its_compute_bar_only_where_it_fits():
    """White on a compute bar's blue; a label wider than its bar would sit on the pale lane
    (1.09:1, as the visual test once measured for "v916" on a real run). Four-digit versions on
    bars from a few px up to ~60 px: every drawn label fits its bar, and some are drawn."""
    run = aps.simulate(aps.problems.Quadratic(curvature=[1.0], x0=[1.0]), workers=3, lr=0.01,
                       steps=1200, compute_times=[1, 1.3, 1.7], jitter=0.5, seed=2)
    model = rt.TimelineModel(run.trace)
    drawn = 0
    for width in (480, 720, 1400):
        for frame in (model.frames // 2, model.frames - 1):
            svg_text = rt.timeline_svg(model, frame, width)
            white = r'<rect [^>]*\swidth="([\d.]+)"[^>]*/><text [^>]*fill="#ffffff"[^>]*>(v\d+)</text>'
            for bar, label in re.findall(white, svg_text):
                drawn += 1
                assert float(bar) > 1.1 * rt.LABEL_CHAR * len(label) + 6, (width, frame, bar, label)
    assert drawn > 0


def test_a_push_label_sits_on_the_page_s_colour_above_every_arrow():
    """Many pushes close together draw a thicket of arrows where the "stale k" labels go (a real
    run in lecture 06: the label on orange arrows, 1.78:1, as the visual test measured). Every
    label is drawn after the last arrow, on a patch of the page's colour that holds its text."""
    run = aps.simulate(aps.problems.LeastSquares(n=256, dim=8), workers=4, steps=14,
                       compute_times=[1, 1.1, 1.2, 1.3], seed=0)
    model = rt.TimelineModel(run.trace)
    svg_text = rt.timeline_svg(model, model.frames - 3)
    elements = re.findall(r"<(rect|line|text|path|polyline|circle|polygon)\b([^>]*)>(?:([^<]*)</text>)?", svg_text)
    labels = [i for i, (tag, _, content) in enumerate(elements) if tag == "text" and content.startswith("stale")]
    assert len(labels) >= 3, "this frame shows several stale pushes' labels"
    arrows = [i for i, (tag, _, _) in enumerate(elements) if tag in ("line", "path", "polygon")]
    assert min(labels) > max(a for a in arrows if a < max(labels)), "an arrow is drawn over a label"
    for i in labels:
        tag, attrs, _ = elements[i - 1]
        patch = {k: float(v) for k, v in re.findall(r'\b(x|y|width|height)="([\d.]+)"', attrs)}
        text = {k: float(v) for k, v in re.findall(r'\b(x|y)="([\d.]+)"', elements[i][1])}
        assert tag == "rect" and BG in attrs, elements[i - 1]
        assert patch["y"] < text["y"] <= patch["y"] + patch["height"], (patch, text)
