"""Frames → one animated SVG: what a widget shows where no kernel runs (GitHub, nbviewer, exported
HTML, the lecture site), as a picture that plays by itself.

A widget draws each frame with its own render function (Trace → SVG). `animated_svg` puts a few
of those frames, one after another, into a single <svg>: each frame is a group, and CSS keyframes
show one group at a time, forever, a second each, holding the informative frame (the first
stale push) longer. The page needs no script and no kernel: only CSS, which nbconvert's HTML,
browsers and SVG images (<img>) run.

- Still where nothing moves. The informative frame is the one a renderer shows when it runs no
  animation: every other group carries the attribute visibility="hidden", which the animation
  overrides and which survives where a renderer strips <style>. With prefers-reduced-motion the
  animation is off too. So a PDF (rsvg: checked), a page stripped of its styles or a reader who
  asked for no motion sees the still frame, as before animations existed.
- Paused under the pointer where it is drawn inline (nbconvert's image/svg+xml, a browser
  opening the file): hovering the picture stops it on the frame shown. In an <img>, the way
  notebooks show it (picture.py), the pointer does not reach it and it plays on.
- Small. At most MAX_FRAMES frames; styles and <defs> shared once; an element drawn identically
  in several frames (a lane, a label, a bar already finished) is written once, in the still
  frame, and the other frames point at it with <use>. The still frame is the last group: where a
  renderer shows every group at once, it lies on top.
- Script-free: no <script>, no on…= attributes, no external links (GitHub and nbviewer strip them).
- Its own names. CSS in an inline SVG applies to the whole page, so its classes, keyframes and ids
  start with a name made from a hash of its content: two animations on one page never collide,
  and the same animation is written the same way each time (notebooks don't churn).
"""
import hashlib
import re
from collections import namedtuple
from html import escape, unescape

from .picture import img_html
from .svg import BG, rect, text

MAX_FRAMES = 12          # frames in one animation: enough for v0 → v1 → a stale push, small to commit
SECONDS = 1.0            # each frame is shown this long...
HOLD = 3.0               # ...and the still frame (the informative one) this long
CAPTION_LINE = 14        # px between caption lines (font-size 11)

Frame = namedtuple("Frame", "number svg caption")
Frame.__doc__ = """One frame of an animation: its frame `number` in the widget, the `svg` its render
function drew, and its `caption` (a sentence; "" for none), written under the picture."""


def frames_around(still, frames, count=MAX_FRAMES, after=3):
    """Which frames an animation shows: `count` consecutive frames of 0..frames-1 that hold
    `still`, `after` of them after it where the run allows (more before it at the run's end)."""
    if isinstance(frames, bool) or not isinstance(frames, int) or frames < 1:
        raise ValueError(f"frames={frames!r} is not allowed: frames must be an integer >= 1")
    if isinstance(still, bool) or not isinstance(still, int) or not 0 <= still < frames:
        raise ValueError(f"still={still!r} is not allowed: still must be an integer in 0..{frames - 1}")
    if isinstance(count, bool) or not isinstance(count, int) or not 1 <= count <= MAX_FRAMES:
        raise ValueError(f"count={count!r} is not allowed: count must be an integer in 1..{MAX_FRAMES}")
    count = min(count, frames)
    start = min(max(still - (count - 1 - after), 0), frames - count)
    return list(range(start, start + count))


_OPEN = re.compile(r"\s*<svg\b([^>]*)>(.*)</svg>\s*$", re.S)
_ATTR = re.compile(r'([A-Za-z_][\w:.-]*)="([^"]*)"')
_TITLE = re.compile(r"<title>(.*?)</title>", re.S)
_SHARED = re.compile(r"<style\b[^>]*>.*?</style>|<defs\b[^>]*>.*?</defs>", re.S)
# one element a token: <a …/>, <a …>text</a>, else text or a lone tag (kept as it is, in place)
_TOKEN = re.compile(r"<([A-Za-z][\w:-]*)\b[^<>]*?/>|<([A-Za-z][\w:-]*)\b[^<>]*>[^<]*</\2>"
                    r"|[^<]+|<[^>]*>", re.S)
_FORBIDDEN = re.compile(r"<script\b|\son\w+\s*=|javascript:", re.I)


def _parse(picture, i):
    """(attributes, title, shared parts, body tokens) of one frame's <svg>."""
    match = _OPEN.match(picture) if isinstance(picture, str) else None
    if match is None:
        raise ValueError(f"frames[{i}].svg={str(picture)[:60]!r} is not allowed: each frame must be "
                         f"one <svg>…</svg>")
    if _FORBIDDEN.search(picture):
        raise ValueError(f"frames[{i}].svg holds a script or an on…= attribute: an animation for "
                         f"pages without a kernel must be script-free")
    attributes = dict(_ATTR.findall(match[1]))
    if "width" not in attributes or "height" not in attributes:
        raise ValueError(f"frames[{i}].svg={picture[:60]!r} is not allowed: each frame's <svg> "
                         f"must have a width and a height")
    body = match[2]
    title = _TITLE.search(body)
    body = _TITLE.sub("", body, count=1)
    shared = _SHARED.findall(body)
    body = _SHARED.sub("", body)
    return attributes, unescape(title[1]) if title else "", shared, [m[0] for m in _TOKEN.finditer(body)]


def _shareable(token):
    """An element complete in itself, without an id: one that <use> can point at."""
    return (token.startswith("<") and not token.startswith("</")
            and (token.endswith("/>") or re.fullmatch(r"<([\w:-]+)\b[^<>]*>[^<]*</\1>", token, re.S))
            and not re.search(r"\sid=", token.split(">", 1)[0]))


def _wrap(sentence, width):
    """`sentence` in lines of at most `width` characters, broken at spaces."""
    lines, line = [], ""
    for word in sentence.split():
        if line and len(line) + 1 + len(word) > width:
            lines.append(line)
            line = word
        else:
            line = f"{line} {word}" if line else word
    return lines + ([line] if line else [])


def _percent(seconds, total):
    return f"{100 * seconds / total:.4f}".rstrip("0").rstrip(".")


def animated_svg(frames, still, seconds=SECONDS, hold=HOLD, title=None):
    """One <svg> that shows `frames` (a list of Frame, of one size) in turn, `seconds` each, the
    frame numbered `still` for `hold` seconds; it starts on `still`, shows `still` where nothing
    moves, and pauses under the pointer. Each frame's caption is written under its picture."""
    if not isinstance(frames, (list, tuple)) or not 1 <= len(frames) <= MAX_FRAMES:
        raise ValueError(f"frames={frames!r:.60} is not allowed: frames must be a list of 1 to "
                         f"{MAX_FRAMES} Frame(number, svg, caption)")
    numbers = [f.number for f in frames]
    if len(set(numbers)) != len(numbers):
        raise ValueError(f"frames numbered {numbers} are not allowed: each frame's number must be "
                         f"its own")
    if still not in numbers:
        raise ValueError(f"still={still!r} is not allowed: still must be one of the frames' numbers "
                         f"{numbers}")
    for name, value in (("seconds", seconds), ("hold", hold)):
        if isinstance(value, bool) or not isinstance(value, (int, float)) or not 0.05 <= value <= 60:
            raise ValueError(f"{name}={value!r} is not allowed: {name} must be a number of seconds "
                             f"in 0.05..60")
    parsed = [_parse(f.svg, i) for i, f in enumerate(frames)]
    k = numbers.index(still)
    attributes, still_title = parsed[k][0], parsed[k][1]
    width, height = attributes["width"], attributes["height"]
    for i, (other, *_) in enumerate(parsed):
        if (other["width"], other["height"]) != (width, height):
            raise ValueError(f"frames[{i}] is {other['width']} × {other['height']}: every frame must "
                             f"be {width} × {height}, the size of the still frame")
    if len(frames) == 1:
        return frames[0].svg
    uid = "aps" + hashlib.sha1(repr((list(frames), still, seconds, hold, title)).encode()).hexdigest()[:8]

    captions = _captions(frames, float(width), float(height))
    extra = CAPTION_LINE * max(len(c) for c in captions) + 8
    under = rect(0, float(height), float(width), extra, BG, rx=0)     # behind the caption
    bodies = _written_once([tokens + [under] for *_, tokens in parsed], first=k, uid=uid)
    hidden = ' visibility="hidden"'          # all but the still frame, where nothing moves
    groups = [f'<g class="{uid}-f {uid}-f{i}" data-frame="{n}"{"" if n == still else hidden}>'
              f'{bodies[i]}{"".join(captions[i])}</g>' for i, n in enumerate(numbers)]
    groups.append(groups.pop(k))             # last: on top where a renderer shows every frame
    shared = list(dict.fromkeys(part for _, _, parts, _ in parsed for part in parts))
    label = title or (f"{still_title or 'a picture'} — animated: frames {numbers[0]} to "
                      f"{numbers[-1]}, {seconds:g} s each, holding frame {still}")
    root = dict(attributes)
    root["class"] = f"{root.get('class', '')} asyncps-animation {uid}".strip()
    root["height"] = f"{float(height) + extra:g}"
    root["viewBox"] = f"0 0 {width} {float(height) + extra:g}"
    root["aria-label"] = escape(label)
    root.setdefault("role", "img")
    root["xmlns:xlink"] = "http://www.w3.org/1999/xlink"
    opening = " ".join(f'{name}="{value}"' for name, value in root.items())
    return (f"<svg {opening}><title>{escape(label)}</title>{''.join(shared)}"
            f"<style>{_timing_css(uid, numbers, still, seconds, hold)}</style>{''.join(groups)}</svg>")


def _captions(frames, width, height):
    """Each frame's caption as <text> lines under a picture `height` tall."""
    per_line = max(20, int((width - 16) / 6.2))
    captions = []
    for f in frames:
        lines = _wrap(f"frame {f.number}: {f.caption}" if f.caption else f"frame {f.number}", per_line)
        captions.append([text(8, height + CAPTION_LINE * (k + 1), line) for k, line in enumerate(lines)])
    return captions


def _written_once(frames, first, uid):
    """The frames' bodies (lists of tokens), each element drawn in several frames written out once,
    in frame `first` if it has it (else where it first appears), with an id; elsewhere a <use>."""
    seen_in = {}
    for tokens in frames:
        for token in set(tokens):
            if _shareable(token):
                seen_in[token] = seen_in.get(token, 0) + 1
    defined, bodies = {}, [None] * len(frames)
    for i in [first] + [i for i in range(len(frames)) if i != first]:
        body = []
        for token in frames[i]:
            if token in defined:
                body.append(f'<use xlink:href="#{defined[token]}"/>')
            elif seen_in.get(token, 0) > 1:
                defined[token] = f"{uid}-{len(defined)}"
                name = re.match(r"<([\w:-]+)", token)[1]
                body.append(f'<{name} id="{defined[token]}"{token[len(name) + 1:]}')
            else:
                body.append(token)
        bodies[i] = "".join(body)
    return bodies


def _timing_css(uid, numbers, still, seconds, hold):
    """The CSS that shows frame i (group class {uid}-f{i}) from starts[i] to starts[i + 1] of one
    cycle, begins the cycle at the still frame, pauses under the pointer, and does nothing for
    readers who asked for reduced motion."""
    durations = [hold if n == still else seconds for n in numbers]
    starts = [sum(durations[:i]) for i in range(len(numbers) + 1)]
    cycle, last = starts[-1], len(numbers) - 1
    keyframes, names = [], []
    for i in range(len(numbers)):
        steps = ["0%{visibility:hidden}"] if i > 0 else []       # step-end: each step holds
        steps.append(f"{_percent(starts[i], cycle)}%{{visibility:visible}}")
        if i < last:
            steps.append(f"{_percent(starts[i + 1], cycle)}%{{visibility:hidden}}")
        steps.append("100%{visibility:hidden}" if i < last else "100%{visibility:visible}")
        keyframes.append(f"@keyframes {uid}-k{i}{{{''.join(steps)}}}")
        names.append(f".{uid}-f{i}{{animation-name:{uid}-k{i}}}")
    delay = starts[numbers.index(still)]
    return ("".join(keyframes)
            + "@media (prefers-reduced-motion:no-preference){"
            + f".{uid}-f{{animation-duration:{cycle:g}s;animation-timing-function:step-end;"
            + f"animation-iteration-count:infinite;animation-delay:-{delay:g}s}}"
            + "".join(names) + "}"
            + f"svg.{uid}:hover .{uid}-f{{animation-play-state:paused}}")


def animated_html(picture, still, caption):
    """The HTML a widget shows without a kernel: the animated picture as an <img> (picture.py:
    what every frontend shows, trusted or not), and in words the still frame (what shows where
    nothing moves) and what the picture plays."""
    numbers = sorted(int(n) for n in re.findall(r'<g [^>]*data-frame="(\d+)"', picture))
    plays = (f' <small>(the picture plays frames {numbers[0]} to {numbers[-1]} and holds on frame '
             f'{still}; run the cell to step through it)</small>' if len(numbers) > 1 else "")
    return (f'<div class="asyncps-static asyncps-animated">{img_html(picture)}'
            f'<p><b>frame {still}</b>: {escape(caption)}{plays}</p></div>')
