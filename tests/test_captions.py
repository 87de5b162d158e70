"""A picture's caption and the words beside it name the same thing the picture shows (issue 38).

- 00-start-here: the frame the Timeline's picture holds, the frame its caption names, the frame
  `timeline.state` prints and the event the sentence under it reads are one frame, the run's
  first stale push (they once came from two computations, and disagreed when a setting changed).
- 10-the-class-is-the-cluster: the lanes are named by student in seat order (stand-in k sits in
  seat k), and every caption names its worker as its lane does ("stand-in 2", never "worker 2").

The notebooks' checks read the committed outputs only (no kernel, no room): cheap. The unit checks
build the same things from a run.
"""
import ast
import json
import re
import threading
import time
from html import unescape
from pathlib import Path
from urllib.parse import unquote

import pytest

import asyncps as aps
from asyncps.widgets import render_timeline as rt

NOTEBOOKS = Path(__file__).resolve().parents[1] / "notebooks"
LSQ = aps.problems.LeastSquares(n=128, dim=4, seed=0)


def outputs(name):
    """(cell index, mime type or "stream", text) of every output of the committed notebook."""
    cells = json.loads((NOTEBOOKS / f"{name}.ipynb").read_text())["cells"]
    for i, cell in enumerate(cells):
        for out in cell.get("outputs", []):
            if "text" in out:
                yield i, "stream", "".join(out["text"])
            for mime, data in out.get("data", {}).items():
                yield i, mime, "".join(data) if isinstance(data, list) else str(data)


def timeline_picture(name):
    """The Timeline's picture in the notebook: (its HTML with the <img> decoded, its SVG)."""
    found = {mime: text for _, mime, text in outputs(name)
             if mime in ("text/html", "image/svg+xml") and "asyncps-timeline" in unquote(text)}
    assert set(found) == {"text/html", "image/svg+xml"}, f"{name}: no Timeline picture committed"
    return unescape(unquote(found["text/html"])), found["image/svg+xml"]


def still_group(svg):
    """The frame number and caption of the animation's still frame: the group not hidden."""
    groups = re.findall(r'<g ([^>]*data-frame="(\d+)"[^>]*)>(.*?)</g>(?=<g [^>]*data-frame|</svg>)',
                        svg, re.S)
    assert groups, "no frames in the animated picture"
    still = [(int(n), body) for attrs, n, body in groups if 'visibility="hidden"' not in attrs]
    assert len(still) == 1, f"{len(still)} still frames"
    n, body = still[0]
    captions = re.findall(rf">(frame {n}: [^<]+)</text>", body)
    return n, unescape(captions[-1]) if captions else None


def lane_labels(svg):
    """The lanes' labels, top to bottom (server first), of the first frame drawn in `svg`."""
    labels = re.findall(r'text-anchor="end"[^>]*>([^<]+)</text>', svg)
    return [unescape(label) for label in labels if not label.startswith("time")
            and not re.fullmatch(r"stale \d+|fresh|dropped", label)]


def test_00_the_picture_its_caption_and_the_text_beside_it_name_one_frame():
    html, svg = timeline_picture("00-start-here")
    shown = int(re.search(r"<p><b>frame (\d+)</b>: ([^<]+?) <small>", html).group(1))
    said = re.search(r"<p><b>frame \d+</b>: ([^<]+?) <small>", html).group(1)
    assert f"holds on frame {shown};" in html
    frame, caption = still_group(svg)
    assert frame == shown and caption == f"frame {shown}: {said}"   # the picture's own caption
    streams = [text for _, mime, text in outputs("00-start-here") if mime == "stream"]
    state = next(t for t in streams if re.match(r"frame \d+/\d+: ", t))
    assert state.startswith(f"frame {shown}/") and said in state.splitlines()[0]
    # ...and that frame is the run's first stale push, whose Push the next sentence reads
    run = aps.simulate(aps.problems.Quadratic(curvature=[1.0, 4.0], x0=[1.0, 1.0]), workers=2,
                       policy="async", lr=0.1, steps=6, compute_times=[1, 1.5])
    stale = next(i for i, e in enumerate(run.trace.events) if e.kind == "push" and e.staleness)
    assert shown == stale, "the picture holds another frame than the first stale push"
    push = run.trace.events[stale]
    assert (f"worker {push.worker}'s gradient was computed on v{push.computed_on}, but the server "
            f"had already moved to v{push.applied_to}") in state


def test_10_lanes_are_in_seat_order_and_captions_name_them_as_the_lanes_do():
    html, svg = timeline_picture("10-the-class-is-the-cluster")
    lanes = lane_labels(svg)
    printed = next(re.search(r"students: (\[.*\])", t).group(1)
                   for _, mime, t in outputs("10-the-class-is-the-cluster")
                   if mime == "stream" and "students: [" in t)
    students = ast.literal_eval(printed)                 # the run's trace.meta["students"]
    assert lanes[0] == "server" and sorted(lanes[1:]) == sorted(students)
    assert lanes[1:] == [f"stand-in {k}" for k in range(len(lanes) - 1)], \
        f"lanes not in seat order: stand-in k is in seat k ({lanes})"
    captions = re.findall(r">frame \d+: ([^<]+)</text>", svg) + \
        [re.search(r"<p><b>frame \d+</b>: ([^<]+?) <small>", html).group(1)]
    assert captions
    for caption in map(unescape, captions):
        assert not re.search(r"\bworker \d", caption), f"a caption says 'worker k': {caption}"
        if not caption.startswith(("at t=", "every worker", "the run")):
            assert any(caption.startswith(lane) for lane in lanes[1:]), \
                f"a caption names no lane of the picture: {caption}"


def classroom_trace(students):
    run = aps.simulate(LSQ, workers=3, steps=12, compute_times=[1, 1.4, 2.1], seed=0)
    return aps.Trace(events=list(run.trace.events), losses=list(run.trace.losses),
                     meta={**run.trace.meta, "engine": "classroom", "students": dict(students)})


def test_a_classroom_caption_names_the_student_its_lane_shows():
    trace = classroom_trace({"0": "ada", "1": "bo", "2": "a long student name"})
    model = rt.TimelineModel(trace)
    for frame, e in enumerate(model.events):
        said = aps.widgets.caption(model, frame)
        name = rt.student_name(trace, e.worker)
        assert said.startswith(name) and not said.startswith("worker"), said
        assert rt.lane_name(trace, e.worker) in rt.timeline_svg(model, frame)
        assert name.startswith(rt.lane_name(trace, e.worker).rstrip("…"))
    plain = rt.TimelineModel(aps.simulate(LSQ, workers=2, steps=4, seed=0).trace)
    assert all(aps.widgets.caption(plain, f).startswith("worker ") for f in range(plain.frames))


@pytest.mark.parametrize("first", [[], ["ada"]])
def test_stand_ins_sit_in_their_seats_whatever_the_order_their_threads_reach_the_room(first):
    """Stand-in k in seat k, its slowdown the k-th of the empty seats'; a student who came
    first keeps the lowest seat."""
    room = aps.classroom.serve(LSQ, workers=4, policy="async", lr=0.05, steps=40)
    try:
        students = [threading.Thread(target=aps.classroom.join, daemon=True,
                                     args=(room.address, room.token, name, LSQ),
                                     kwargs={"progress": False}) for name in first]
        for student in students:
            student.start()
        deadline = time.monotonic() + 30
        while len(room.seats) < len(first) and time.monotonic() < deadline:
            time.sleep(0.01)
        stand_ins = aps.classroom.fill(room, LSQ, slowdowns=[0.0] * (3 - len(first)) + [0.004])
        seats = {k: s["name"] for k, s in room.seats.items()}
        expected = first + [f"stand-in {k}" for k in range(len(first), 4)]
        assert seats == dict(enumerate(expected))
        run = room.result(timeout=60)
        assert stand_ins.errors == {} and set(stand_ins.wait(30)) == set(expected) - set(first)
        assert [rt.lane_name(run.trace, k) for k in rt.lanes(run.trace)] == expected
        for student in students:
            student.join(30)
    finally:
        room.stop()


@pytest.mark.parametrize("name", ["00-start-here", "10-the-class-is-the-cluster"])
def test_the_notebooks_pictures_are_found(name):
    html, svg = timeline_picture(name)
    assert still_group(svg)[1] is not None and "<p><b>frame" in html
