"""Pictures every frontend shows at first sight: an SVG as an <img>, never as inline <svg>.

A notebook output is a bundle of MIME types, and the frontend shows one of them. JupyterLab and
Notebook 7 rank them (widget view, then text/html, markdown, image/svg+xml, image/png, text/plain)
and, for a notebook that is not trusted (every notebook of a fresh clone), keep only the types
they call safe: image/svg+xml and the widget view are not; text/html is, after sanitising it. The
sanitiser removes inline <svg> (leaving its <text> as loose words), but keeps an <img> whose
src is a data: URI. So each picture of the package goes into text/html as

    <img src="data:image/svg+xml,…" alt="what it shows" width="…">

which JupyterLab and Notebook 7 show, trusted or not, and so does nbconvert's HTML (nbviewer)
(tests/browser/test_first_sight.py, tests/test_first_sight_files.py; VS Code and GitHub unchecked).
Inside an <img> an SVG runs its CSS animation (the Timeline plays) but sees no page CSS: its
theme colours take their light fallbacks (svg.py), so it carries a white background of its own
and reads as a light card on a dark theme, like a matplotlib figure.

`Picture(*svgs)`: SVG strings (e.g. `aps.widgets.loss_curves(...)`) as one output that shows
everywhere: `display(aps.widgets.Picture(chart))`, or a cell's last expression. `stack_svg`: several
pictures as one SVG (image/svg+xml, for PDF).
"""
import re
from html import escape, unescape
from urllib.parse import quote, unquote

from .svg import FONT

_ROOT = re.compile(r"<svg\b([^>]*)>")
_LABEL = re.compile(r'\baria-label="([^"]*)"')
_TITLE = re.compile(r"<title>(.*?)</title>", re.S)
_WIDTH = re.compile(r'\bwidth="([\d.]+)"')
BACKGROUND = "#ffffff"         # the light fallback of the theme's background (svg.BG)
# characters left as they are in the data: URI (quote() encodes every other one): what a URI may
# hold unencoded, minus % and #; " and & are encoded, so the attribute needs no HTML escaping
_SAFE = " /=:;,'()!*+-._~?@[]$"


def label_of(svg):
    """What an SVG says it shows: its aria-label, else its <title>, else ''."""
    root = _ROOT.search(svg)
    named = _LABEL.search(root[1]) if root else None
    if named:
        return unescape(named[1])
    title = _TITLE.search(svg)
    return unescape(title[1]) if title else ""


def data_uri(svg):
    """`svg` as a data: URI for an <img>, on a background of its own (an <img> sees no page)."""
    root = _ROOT.search(svg)
    if root is None:
        raise ValueError(f"svg={svg[:60]!r} is not allowed: it must be an <svg>…</svg> string")
    if "style=" not in root[1]:
        svg = f'{svg[:root.end() - 1]} style="background-color:{BACKGROUND}">{svg[root.end():]}'
    return "data:image/svg+xml," + quote(svg, safe=_SAFE)


def img_html(svg, css_class="asyncps-picture"):
    """`svg` as an <img> that every frontend shows, trusted or not; its alt text is what the SVG
    says it shows; at most as wide as the output area."""
    root = _ROOT.search(svg)
    width = _WIDTH.search(root[1]) if root else None
    size = f' width="{width[1]}"' if width else ""
    return (f'<img class="{css_class}" src="{data_uri(svg)}" alt="{escape(label_of(svg))}"{size} '
            f'style="max-width:100%;height:auto"/>')


class Picture:
    """SVG strings shown side by side as one output: <img>s in text/html (class asyncps-pictures;
    a widget's picture is class asyncps-static), the pictures stacked into one image/svg+xml
    (PDF), their labels as text/plain."""

    def __init__(self, *svgs):
        if not svgs or not all(isinstance(s, str) and _ROOT.search(s) for s in svgs):
            raise ValueError(f"svgs={svgs!r:.80} is not allowed: give one or more <svg>…</svg> "
                             f"strings, e.g. aps.widgets.loss_curves(...)")
        self.svgs = svgs

    def __repr__(self):
        return "Picture(" + " | ".join(label_of(s) or "svg" for s in self.svgs) + ")"

    def _repr_mimebundle_(self, **kwargs):
        row = "".join(img_html(s) for s in self.svgs)
        return {"text/html": f'<div class="asyncps-pictures" style="display:flex;flex-wrap:wrap;'
                             f'gap:8px">{row}</div>',
                "image/svg+xml": self.svgs[0] if len(self.svgs) == 1 else stack_svg([self.svgs]),
                "text/plain": repr(self)}


def top_level_svgs(html):
    """The <svg>…</svg> elements of `html` that are not inside another, in order."""
    found, depth, start = [], 0, 0
    for tag in re.finditer(r"<svg\b|</svg>", html):
        if tag[0] != "</svg>":
            depth, start = depth + 1, (tag.start() if depth == 0 else start)
        elif depth:
            depth -= 1
            if depth == 0:
                found.append(html[start:tag.end()])
    return found


def pictures_as_images(html):
    """`html` with each top-level inline <svg> made an <img> (an untrusted notebook drops the
    former, keeping its words)."""
    for svg in top_level_svgs(html):
        html = html.replace(svg, img_html(svg), 1)
    return html


_IMG = re.compile(r'<img\b[^>]*?\ssrc="data:image/svg\+xml,([^"]*)"')


def svgs_in(html):
    """The SVGs `html` shows as <img> (img_html), as strings as they were drawn: the inverse of
    img_html, for tests and for tools that read a notebook's pictures."""
    return [_without_background(unquote(uri)) for uri in _IMG.findall(html)]


def _without_background(svg):
    return svg.replace(f' style="background-color:{BACKGROUND}">', ">", 1)


_SIZE = re.compile(r'<svg\b[^>]*?\swidth="([\d.]+)"[^>]*?\sheight="([\d.]+)"')


def stack_svg(rows, gap=8, title=None):
    """One SVG of several: `rows` of SVG strings, side by side in a row, rows top to bottom (a
    widget's whole picture as one image/svg+xml, for PDF and renderers without widgets). Empty
    strings (a chart not drawn yet) are left out. Its title: `title`, else its pictures' titles."""
    body, y, width, titles = [], 0.0, 0.0, []
    for row in filter(None, ([p for p in row if p] for row in rows)):
        x, tallest = 0.0, 0.0
        for picture in row:
            size = _SIZE.match(picture)
            if size is None:
                raise ValueError(f"picture={picture[:60]!r} is not allowed: each picture must be an "
                                 f"<svg> with a width and a height")
            w, h = float(size[1]), float(size[2])
            named = _TITLE.search(picture)
            titles += [unescape(named[1])] if named else []
            body.append(picture.replace("<svg", f'<svg x="{x:g}" y="{y:g}"', 1))
            x, tallest = x + w + gap, max(tallest, h)
        width, y = max(width, x - gap), y + tallest + gap
    height = max(y - gap, 0.0)
    label = escape(title or " | ".join(titles) or "asyncps pictures")
    # labelled by its aria-label only: its children are its pictures, each with its own <title>
    # and the rule that fits it to the page (which, inline, fits this one too)
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="asyncps-stack asyncps-svg" '
            f'width="{width:g}" height="{height:g}" viewBox="0 0 {width:g} {height:g}" role="img" '
            f'aria-label="{label}" {FONT}>{"".join(body)}</svg>')
