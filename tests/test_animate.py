"""The picture a widget shows without a kernel (animate.py): frames around the first stale push as
one animated, script-free SVG. Checked as text here (each frame is what the render function drew,
its version label is the model's, the still frame is the one shown without animation, the size is
bounded) and, in Chromium from a file:// page, as it plays (marked slow: it launches a browser).

Helpers for other browser checks (the lecture site's): `visible_frame(page)` is the frame number an
animated SVG on a Playwright page shows now; `watch_frames(page, seconds)` the frames it shows over
a few seconds; `frames_at(page, times)` what it shows at given times of its own clock. Import them
with `from test_animate import visible_frame, watch_frames` (tests/ is on sys.path under pytest).
"""
import re
import time
from html import escape
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

import asyncps as aps
from asyncps.widgets import ParameterView, Playground, Timeline, animate
from asyncps.widgets import render_params as rp
from asyncps.widgets import render_timeline as rt
from asyncps.widgets.picture import svgs_in

NS = "{http://www.w3.org/2000/svg}"
HREF = "{http://www.w3.org/1999/xlink}href"
QUAD = aps.problems.Quadratic(curvature=[1.0, 4.0], x0=[1.0, 1.0])


def start_here_run():
    """The run of notebooks/src/00-start-here.py's first animation."""
    return aps.simulate(QUAD, workers=2, policy="async", lr=0.1, steps=6, compute_times=[1, 1.5])


def walkthrough_run():
    """The run of notebooks/src/02-asynchronous-ps.py's walk-through (Timeline and ParameterView)."""
    return aps.simulate(QUAD, workers=2, policy="async", lr=0.1, steps=12, compute_times=[1, 1.5])


# -- reading an animated SVG back ----------------------------------------------------------------
def groups(svg):
    """{frame number: the frame's elements in drawing order}, each <use> replaced by the element it
    points at (its id dropped), so a frame reads as if it were written out in full."""
    root = ET.fromstring(svg)
    by_id = {e.get("id"): e for e in root.iter() if e.get("id")}
    frames = {}
    for g in root.iter(f"{NS}g"):
        if g.get("data-frame") is None:
            continue
        elements = []
        for child in g:
            if child.tag == f"{NS}use":
                target = child.get(HREF)
                assert target and target.startswith("#") and target[1:] in by_id, target
                child = by_id[target[1:]]
            elements.append(child)
        frames[int(g.get("data-frame"))] = elements
    return frames


def drawn(element):
    """What an element draws: its tag, attributes (without id) and text."""
    attributes = {k: v for k, v in element.attrib.items() if k != "id"}
    return element.tag, attributes, element.text


def picture_elements(svg):
    """The elements a render function's <svg> draws (not its <title>, <style> or <defs>)."""
    return [e for e in ET.fromstring(svg) if e.tag not in (f"{NS}title", f"{NS}style", f"{NS}defs")]


def still_frames(svg):
    """The frames shown where no animation runs: those without visibility="hidden"."""
    root = ET.fromstring(svg)
    return [int(g.get("data-frame")) for g in root.iter(f"{NS}g")
            if g.get("data-frame") is not None and g.get("visibility") != "hidden"]


def shown_at(svg, seconds):
    """The frame the CSS animation shows `seconds` after it starts, computed from its rules as a
    browser applies them (step-end keyframes of visibility, one cycle for all, a negative delay)."""
    css = [s for s in ET.fromstring(svg).iter(f"{NS}style") if "@keyframes" in (s.text or "")][0].text
    cycle = float(re.search(r"animation-duration:([\d.]+)s", css)[1])
    delay = float(re.search(r"animation-delay:(-?[\d.]+)s", css)[1])
    phase = ((seconds - delay) % cycle) / cycle * 100
    frames = {int(g.get("class").split()[1].rsplit("-f", 1)[1]): int(g.get("data-frame"))
              for g in ET.fromstring(svg).iter(f"{NS}g") if g.get("data-frame") is not None}
    visible = []
    for index, body in re.findall(r"@keyframes \w+-k(\d+)\{(.*?\})\}", css):
        steps = [(float(p), v) for p, v in re.findall(r"([\d.]+)%\{visibility:(\w+)\}", body)]
        value = [v for p, v in steps if p <= phase][-1]          # step-end: the last step begun
        if value == "visible":
            visible.append(frames[int(index)])
    assert len(visible) == 1, (seconds, visible)
    return visible[0]


# -- the animated Timeline -----------------------------------------------------------------------
def test_the_timeline_s_fallback_is_an_animation_of_a_bounded_number_of_frames():
    timeline = Timeline(start_here_run())
    bundle = timeline._repr_mimebundle_()
    svg = bundle["image/svg+xml"]
    frames = groups(svg)
    assert 2 <= len(frames) <= animate.MAX_FRAMES
    numbers = sorted(frames)
    assert numbers == list(range(numbers[0], numbers[0] + len(numbers)))   # consecutive events
    assert timeline.static_frame() in numbers
    assert svg in svgs_in(bundle["text/html"])
    assert f"<b>frame {timeline.static_frame()}</b>" in bundle["text/html"]


def test_the_still_frame_is_the_first_stale_push_and_the_only_one_shown_without_animation():
    timeline = Timeline(start_here_run())
    stale = timeline.model.first_stale_push()
    svg = timeline._repr_mimebundle_()["image/svg+xml"]
    assert still_frames(svg) == [stale]
    assert shown_at(svg, 0.0) == stale                  # and the animation starts on it
    timeline.frame = 3                                  # a frame chosen by hand is the still one
    assert still_frames(timeline._repr_mimebundle_()["image/svg+xml"]) == [3]


def test_each_frame_is_what_the_render_function_drew_with_its_caption_under_it():
    timeline = Timeline(walkthrough_run(), frame="stale")
    model = timeline.model
    for number, elements in groups(timeline.animated_svg()).items():
        picture = picture_elements(rt.timeline_svg(model, number, timeline.width))
        assert [drawn(e) for e in elements[:len(picture)]] == [drawn(e) for e in picture], number
        under, *lines = elements[len(picture):]             # the caption, on its background
        assert under.tag == f"{NS}rect" and all(e.tag == f"{NS}text" for e in lines)
        assert " ".join(e.text for e in lines) == f"frame {number}: {rt.caption(model, number)}"


def test_each_frame_s_version_label_is_the_model_s_version_at_that_frame():
    timeline = Timeline(walkthrough_run(), frame="stale")
    seen = set()
    for number, elements in groups(timeline.animated_svg()).items():
        status = [e.text for e in elements if e.get("class") == "aps-status"]
        assert len(status) == 1 and status[0].endswith(f"server at v{timeline.model.version_at(number)}")
        seen.add(status[0])
    assert len(seen) >= 2                               # the server moves within the animation


def test_the_frames_play_in_order_one_at_a_time_and_hold_on_the_still_frame():
    timeline = Timeline(start_here_run())
    svg = timeline.animated_svg()
    numbers = sorted(groups(svg))
    still = timeline.static_frame()
    cycle = animate.SECONDS * (len(numbers) - 1) + animate.HOLD
    shown = [shown_at(svg, t / 10) for t in range(int(cycle * 10))]
    order = [f for i, f in enumerate(shown) if i == 0 or shown[i - 1] != f]
    start = numbers.index(still)
    assert order == numbers[start:] + numbers[:start]   # from the still frame on, round and round
    assert shown.count(still) == pytest.approx(animate.HOLD * 10, abs=1)
    assert shown.count(numbers[0] if numbers[0] != still else numbers[1]) == pytest.approx(
        animate.SECONDS * 10, abs=1)


def test_the_animation_is_script_free_and_self_contained():
    for svg in (Timeline(start_here_run()).animated_svg(),
                ParameterView(walkthrough_run(), QUAD)._repr_mimebundle_()["image/svg+xml"]):
        root = ET.fromstring(svg)
        assert not [e for e in root.iter() if e.tag.endswith("script") or e.tag.endswith("foreignObject")]
        assert not [(e.tag, k) for e in root.iter() for k in e.attrib if k.lower().startswith("on")]
        links = [v for e in root.iter() for k, v in e.attrib.items() if k in (HREF, "href")]
        assert links and all(v.startswith("#") for v in links)     # only its own elements
        assert "javascript:" not in svg and "url(http" not in svg and "@import" not in svg
        css = "".join(s.text or "" for s in root.iter(f"{NS}style"))
        assert ":hover" in css and "animation-play-state:paused" in css
        assert "prefers-reduced-motion" in css


def test_the_animation_is_small_enough_to_commit():
    run = start_here_run()
    timeline = Timeline(run)
    svg = timeline.animated_svg()
    frames = sorted(groups(svg))
    written_out = sum(len(rt.timeline_svg(timeline.model, f, timeline.width)) for f in frames)
    print(f"00-start-here timeline: {len(frames)} frames, {len(svg)} bytes animated, "
          f"{written_out} bytes written out frame by frame")
    assert len(svg) < 150_000
    assert len(svg) < 0.6 * written_out                 # shared parts are written once
    long = aps.simulate(QUAD, workers=8, policy="async", lr=0.05, steps=400)
    assert len(groups(Timeline(long).animated_svg())) == animate.MAX_FRAMES   # bounded, however long


def test_the_same_animation_is_written_the_same_way_and_two_never_share_names():
    a, b = Timeline(start_here_run()).animated_svg(), Timeline(start_here_run()).animated_svg()
    assert a == b                                       # notebooks don't churn
    other = Timeline(walkthrough_run(), frame="stale").animated_svg()
    name = lambda svg: ET.fromstring(svg).get("class").split()[-1]        # noqa: E731
    assert name(a) != name(other)
    ids = lambda svg: {e.get("id") for e in ET.fromstring(svg).iter() if e.get("id")}  # noqa: E731
    assert ids(a) and not ids(a) & ids(other)
    assert all(i.startswith(name(a)) for i in ids(a))


def test_the_parameter_view_plays_the_frames_the_timeline_plays():
    run = walkthrough_run()
    timeline = Timeline(run, frame="stale")
    view = ParameterView(run, QUAD, timeline=timeline)
    svg = view._repr_mimebundle_()["image/svg+xml"]
    stale = timeline.model.first_stale_push()
    assert still_frames(svg) == [stale]
    assert sorted(groups(svg)) == sorted(groups(timeline.animated_svg()))
    for number, elements in groups(svg).items():
        picture = picture_elements(rp.params_svg(view.model, number))
        assert [drawn(e) for e in elements[:len(picture)]] == [drawn(e) for e in picture], number
    bundle = view._repr_mimebundle_()
    assert svg in svgs_in(bundle["text/html"])
    assert escape(rp.param_caption(view.model, stale)) in bundle["text/html"]


def test_frames_around_holds_the_still_frame_and_stays_in_the_run():
    assert animate.frames_around(6, 19) == list(range(0, 12))
    assert animate.frames_around(25, 37) == list(range(17, 29))          # three after it
    assert animate.frames_around(36, 37) == list(range(25, 37))          # at the end: all before
    assert animate.frames_around(0, 5) == [0, 1, 2, 3, 4]                # a short run: all of it
    for still, frames in ((0, 1), (3, 40), (39, 40)):
        chosen = animate.frames_around(still, frames)
        assert still in chosen and 0 <= chosen[0] and chosen[-1] < frames


def test_wrong_arguments_say_what_is_allowed():
    model = rt.TimelineModel(start_here_run().trace)
    one = animate.Frame(0, rt.timeline_svg(model, 0), "")
    with pytest.raises(ValueError, match="still=9"):
        animate.animated_svg([one, one._replace(number=1)], still=9)
    with pytest.raises(ValueError, match="frames="):
        animate.animated_svg([one] * (animate.MAX_FRAMES + 1), still=0)
    narrow = animate.Frame(1, rt.timeline_svg(model, 1, width=400), "")
    with pytest.raises(ValueError, match=r"frames\[1\] is 400"):
        animate.animated_svg([one, narrow], still=0)
    scripted = animate.Frame(1, one.svg.replace("<rect", '<rect onclick="x()"', 1), "")
    with pytest.raises(ValueError, match="script-free"):
        animate.animated_svg([one, scripted], still=0)
    with pytest.raises(ValueError, match="still=5"):
        animate.frames_around(5, 5)
    with pytest.raises(ValueError, match="seconds=0"):
        animate.animated_svg([one, one._replace(number=1)], still=0, seconds=0)
    assert animate.animated_svg([one], still=0) == one.svg       # one frame: nothing to play


# -- one widget for the Playground's timeline (the Voila first-click fix) ------------------------
def test_set_run_shows_another_run_in_the_same_widget():
    timeline = Timeline(start_here_run())
    play, slider = timeline.play, timeline.slider
    other = walkthrough_run()
    timeline.set_run(other, frame="stale")
    model = rt.TimelineModel(other.trace)
    assert (timeline.play, timeline.slider) == (play, slider)
    assert play.max == slider.max == model.frames - 1
    assert play.value == slider.value == model.first_stale_push()
    assert timeline.caption.value.endswith(f">{rt.caption(model, model.first_stale_push())}</div>")
    timeline.set_run(start_here_run(), frame=18)          # back to a shorter run, at its last frame
    assert play.max == slider.max == play.value == 18
    with pytest.raises(ValueError, match="frame=99"):
        timeline.set_run(other, frame=99)


def test_a_playground_change_keeps_its_timeline_widget():
    """A change re-runs the three policies; the Timeline shown stays the same widget, so a click on
    Play just before (in Voila: the lr slider syncs its value once the page renders) is not lost."""
    playground = Playground(steps=40)
    timeline = playground.timeline
    playground.controls["workers"].value = 3
    assert playground.timeline is timeline and playground.timeline_box.children == (timeline,)
    assert timeline.model.workers == 3


# -- in a browser, from a file:// page -----------------------------------------------------------
VISIBLE_FRAMES_JS = """(svg) => [...svg.querySelectorAll('g[data-frame]')]
    .filter(g => getComputedStyle(g).visibility === 'visible').map(g => Number(g.dataset.frame))"""


def visible_frame(page, nth=0, selector="svg.asyncps-animation"):
    """The frame number the `nth` animated SVG (inline) on a Playwright `page` shows now; None when
    it shows none or several."""
    shown = page.locator(selector).nth(nth).evaluate(VISIBLE_FRAMES_JS)
    return shown[0] if len(shown) == 1 else None


def watch_frames(page, seconds, nth=0, every=0.1, selector="svg.asyncps-animation"):
    """The frames the `nth` animated SVG shows over `seconds`, each once, in the order seen. A
    sample that sees no frame or two is left out: on a loaded machine one once fell on the instant
    one frame's group hid and the next one's showed ([6, None, 7, 8, 9]). Samples are wall-clock:
    on a loaded machine a frame can go by unseen ([6, 8, 9], with two busy processes beside the
    suite), so what they show is an order, never that every frame was there (frames_at is)."""
    seen, deadline = [], time.monotonic() + seconds
    while time.monotonic() < deadline:
        frame = visible_frame(page, nth, selector)
        if frame is not None and (not seen or seen[-1] != frame):
            seen.append(frame)
        time.sleep(every)
    return seen


FRAMES_AT_JS = """([selector, nth, times]) => {
  const svg = document.querySelectorAll(selector)[nth];
  const animations = svg.getAnimations({subtree: true});
  animations.forEach(a => a.pause());
  const shown = times.map(t => {
    animations.forEach(a => { a.currentTime = t * 1000; });
    return [...svg.querySelectorAll('g[data-frame]')]
      .filter(g => getComputedStyle(g).visibility === 'visible').map(g => Number(g.dataset.frame));
  });
  return shown;
}"""


def frames_at(page, times, nth=0, selector="svg.asyncps-animation"):
    """What the `nth` animated SVG shows `times` seconds after it started, each time a list of the
    frame numbers visible then: the browser's own animation clock, paused and set to each time
    (the Web Animations API), so no sample can miss a frame however loaded the machine. They stay
    paused, and no longer follow CSS (a pointer's hover): use a page of its own."""
    return page.evaluate(FRAMES_AT_JS, [selector, nth, list(times)])


def wait_for_play_state(page, state, nth=0, selector="svg.asyncps-animation"):
    """Wait until every animation of the `nth` animated SVG is `state` ("running", "paused")."""
    page.wait_for_function("""([selector, nth, state]) => {
        const all = document.querySelectorAll(selector)[nth].getAnimations({subtree: true});
        return all.length > 0 && all.every(a => a.playState === state); }""",
                           arg=[selector, nth, state], timeout=30_000)


def wait_for_another_frame(page, frame, seconds=30, nth=0, selector="svg.asyncps-animation"):
    """The first frame other than `frame` the `nth` animated SVG shows within `seconds` (None)."""
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        now = visible_frame(page, nth, selector)
        if now is not None and now != frame:
            return now
        time.sleep(0.05)
    return None


@pytest.fixture
def chromium():
    import sys
    sys.path.insert(0, str(Path(__file__).parent / "browser"))
    import servers
    with servers.chromium() as browser:
        yield browser


def _page(tmp_path, name, body):
    path = tmp_path / name
    path.write_text(f'<!doctype html><html><head><meta charset="utf-8"></head><body>{body}</body></html>',
                    encoding="utf-8")
    return path.as_uri()


def _pixels(png):
    import io

    from PIL import Image
    return Image.open(io.BytesIO(png)).convert("RGB")


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_the_animation_plays_from_a_file_pauses_under_the_pointer_and_holds_for_reduced_motion(
        tmp_path, chromium):

    timeline = Timeline(start_here_run())
    bundle = timeline._repr_mimebundle_()
    still, numbers = timeline.static_frame(), sorted(groups(bundle["image/svg+xml"]))
    # inline, as nbconvert draws image/svg+xml, and as the <img> a notebook's text/html holds
    as_img = bundle["text/html"].replace("<img ", '<img id="img" ', 1)
    url = _page(tmp_path, "page.html", f'<div>{bundle["image/svg+xml"]}</div>{as_img}')
    page = chromium.new_page(viewport={"width": 900, "height": 900})
    page.goto(url)
    assert visible_frame(page) == still                       # it opens on the still frame...
    first_image = page.locator("#img").screenshot()
    start = numbers.index(still)
    cycle = numbers[start:] + numbers[:start]
    # ...which it holds HOLD seconds, then each frame SECONDS, in order, and round again
    at = [animate.HOLD / 2] + [animate.HOLD + (k + 0.5) * animate.SECONDS for k in range(len(cycle) - 1)]
    at.append(at[-1] + animate.SECONDS)
    clock = chromium.new_page()               # its own page: an animation a script paused or played
    clock.goto(url)                           # no longer follows CSS (the pointer's pause, below)
    assert frames_at(clock, at) == [[n] for n in cycle + [still]]
    clock.close()
    # ...and plays in that order in real time (a loaded machine may sample past a frame)
    seen = watch_frames(page, animate.HOLD + 2.2 * animate.SECONDS)
    nxt = wait_for_another_frame(page, still) if seen == [still] else seen[1]
    assert nxt == cycle[1] or (nxt in cycle and seen == [f for f in cycle if f in seen]), (seen, nxt)
    assert page.locator("#img").screenshot() != first_image    # ...and plays as an <img> too
    page.locator("svg.asyncps-animation").first.hover()       # the pointer pauses it
    wait_for_play_state(page, "paused")
    paused = watch_frames(page, 1.5 * animate.SECONDS)
    assert len(paused) == 1 and paused[0] in numbers, paused
    page.mouse.move(0, 890)
    wait_for_play_state(page, "running")
    assert wait_for_another_frame(page, paused[0]) is not None  # and it goes on once it leaves
    calm = chromium.new_page(reduced_motion="reduce")
    calm.goto(url)
    assert watch_frames(calm, 1.5 * animate.SECONDS) == [still]


@pytest.mark.slow
@pytest.mark.timeout(120)
def test_a_frame_drawn_through_use_looks_like_the_frame_drawn_in_full(tmp_path, chromium):
    timeline = Timeline(start_here_run())
    svg = timeline.animated_svg()
    uid = ET.fromstring(svg).get("class").split()[-1]
    number = max(groups(svg))                                  # the last: most of it is <use>
    assert number != timeline.static_frame() and "<use" in svg
    force = (f"<style>.{uid}-f{{animation:none!important;visibility:hidden!important}}"
             f'.{uid}-f[data-frame="{number}"]{{visibility:visible!important}}</style>')
    page = chromium.new_page(viewport={"width": 900, "height": 600})
    full = rt.timeline_svg(timeline.model, number, timeline.width)
    height = int(ET.fromstring(full).get("height"))
    shots = []
    for name, body in (("animated.html", force + svg), ("full.html", full)):
        page.goto(_page(tmp_path, name, f'<div style="margin:0">{body}</div>'))
        box = page.locator("svg").first.bounding_box()
        shots.append(_pixels(page.screenshot(clip={"x": box["x"], "y": box["y"],
                                                    "width": timeline.width, "height": height})))
    from PIL import ImageChops
    differing = sum(ImageChops.difference(*shots).convert("L").histogram()[1:])
    assert differing == 0, f"{differing} pixels differ between frame {number} via <use> and in full"


def test_the_readme_s_animated_timeline_is_what_the_package_makes():
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    done = subprocess.run([sys.executable, str(root / "scripts" / "readme_figure.py"), "--check"],
                          capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "docs/timeline-animated.svg" in (root / "README.md").read_text()
