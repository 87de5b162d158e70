"""SVG building blocks: enough to draw timelines and charts as plain strings, fast — drawn so that
they read in JupyterLab's light and dark themes, at any width, without colour, and aloud.

Colour. A colour is either fixed (a hex: bars and arrows, from Okabe & Ito's colour-blind-safe
palette, each visible on white and on JupyterLab's dark background) or follows the theme: a CSS
expression over JupyterLab's theme variables, e.g. `var(--jp-ui-font-color1, #222222)`, whose
fallback is what it looks like outside JupyterLab (exported HTML, GitHub, a PDF: on white).
Coloured text mixes its hue with the theme's own text colour (`ink`): darker on white, lighter on
black. An element gets both: the fallback as its attribute, for renderers without CSS, and the
expression in its style, which wins wherever CSS runs. `resolve` computes what an expression
looks like in a given theme (the tests check contrast with it).

Size. Each picture has a natural width and height (what a PDF or an <img> shows); where it sits in
a page it shrinks to the width of the output area, never wider: one CSS rule that each picture
carries, scoped to pictures in HTML, so a picture nested in another (stack_svg) keeps its size.

Words. Each picture has a <title> and an aria-label saying what it shows in a sentence or two.
"""
import math
import re
from functools import lru_cache
from html import escape

FONT = 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"'

# the theme, as JupyterLab's variables name it; the fallback is the light look outside JupyterLab
BG = "var(--jp-layout-color0, #ffffff)"                 # the page behind the picture
TEXT = "var(--jp-ui-font-color1, #222222)"              # labels and titles
MUTED = "var(--jp-ui-font-color2, #616161)"             # tick labels, notes
GRID = "var(--jp-border-color2, #e0e0e0)"               # grid lines
FG = "var(--jp-content-font-color0, #000000)"           # black or white: what a hue is mixed with


def mix(color, percent, other):
    """`percent` % of `color`, the rest `other` (CSS color-mix in sRGB)."""
    return f"color-mix(in srgb, {color} {percent:g}%, {other})"


def ink(color, percent=70):
    """Text in a hue that reads on the theme's background: the hue mixed with black on a light
    theme, with white on a dark one (AA contrast, 4.5:1, on both; see tests/test_drawing.py)."""
    return mix(color, percent, FG)


def tint(color, percent):
    """A surface in a hue, faint on either theme: the hue mixed into the background."""
    return mix(color, percent, BG)


# Okabe & Ito (2008): blue, vermillion, bluish green, reddish purple, orange, sky blue
OKABE_ITO = ("#0072B2", "#D55E00", "#009E73", "#CC79A7", "#E69F00", "#56B4E9")
# fixed colours are graphics (bars, arrows: 3:1 on white and on #111); themed ones follow the page
COLORS = {"compute": "#0072B2", "computing": tint("#0072B2", 25), "wait": tint(FG, 22),
          "pull": "#8C8C8C", "fresh": "#009E73", "stale": "#D55E00", "computed": "#E69F00",
          "lost": "#D55E00", "server": (tint("#0072B2", 10), tint("#0072B2", 22)),
          "lane": tint(FG, 4), "now": TEXT, "text": TEXT, "muted": MUTED, "grid": GRID,
          "background": BG}
INKS = {"stale": ink(COLORS["stale"]), "fresh": ink(COLORS["fresh"]), "lost": ink(COLORS["lost"]),
        "computed": ink(COLORS["computed"], 60)}
ON_COMPUTE = "#ffffff"       # labels on a compute bar: 5.2:1 on its blue, whatever the theme

FIT_STYLE = "<style>:not(svg)>svg.asyncps-svg{max-width:100%;height:auto}</style>"


def svg(width, height, body, css_class, title=None):
    """An <svg> of natural size width × height, labelled `title` (<title> and aria-label)."""
    label = escape(str(title or css_class))
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="{css_class} asyncps-svg" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" role="img" aria-label="{label}" '
            f'{FONT} font-size="11"><title>{label}</title>{FIT_STYLE}{"".join(body)}</svg>')


def paint(fill=None, stroke=None):
    """fill="…" stroke="…" attributes; a themed colour also goes into the style, which wins."""
    attrs, style = [], []
    for name, color in (("fill", fill), ("stroke", stroke)):
        if color is None:
            continue
        if "(" in color:
            attrs.append(f'{name}="{_fallback(color)}"')
            style.append(f"{name}:{color}")
        else:
            attrs.append(f'{name}="{color}"')
    return " ".join(attrs) + (f' style="{";".join(style)}"' if style else "")


def rect(x, y, w, h, fill, stroke="none", width=1.0, opacity=1.0, rx=2):
    extra = f' opacity="{opacity}"' if opacity != 1.0 else ""
    return (f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0.0):.1f}" height="{h:.1f}" rx="{rx}" '
            f'{paint(fill, stroke)} stroke-width="{width}"{extra}/>')


def line(x1, y1, x2, y2, color, width=1.0, dash=None, head=None, opacity=1.0):
    """A line; with `head` (any true value) an arrowhead of its colour at (x2, y2), drawn in place
    (no <defs>: no ids that two pictures on one page could share, or hide from each other)."""
    fade = f' opacity="{opacity}"' if opacity != 1.0 else ""
    dashes = f' stroke-dasharray="{dash}"' if dash else ""
    length = math.hypot(x2 - x1, y2 - y1)
    if not head or length == 0:
        return (f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" '
                f'{paint(stroke=color)} stroke-width="{width}"{dashes}{fade}/>')
    size = min(3.0 + width, length)
    ux, uy = (x2 - x1) / length, (y2 - y1) / length
    bx, by = x2 - ux * size, y2 - uy * size                        # the middle of the head's base
    half = size * 0.45
    shaft = f"M{x1:.1f},{y1:.1f} L{bx:.1f},{by:.1f}"
    tip = (f"M{x2:.1f},{y2:.1f} L{bx - uy * half:.1f},{by + ux * half:.1f} "
           f"L{bx + uy * half:.1f},{by - ux * half:.1f} z")
    if dash:                                                       # a dashed head would be torn
        return (f'<path d="{shaft}" fill="none" {paint(stroke=color)} stroke-width="{width}"'
                f'{dashes}{fade}/><path d="{tip}" {paint(fill=color)}{fade}/>')
    return (f'<path d="{shaft} {tip}" {paint(color, color)} stroke-width="{width}" '
            f'stroke-linejoin="round"{fade}/>')


def text(x, y, content, color=None, size=None, anchor="start", weight=None, cls=None):
    attrs = " " + paint(fill=color or TEXT)
    attrs += f' class="{cls}"' if cls else ""
    attrs += f' font-size="{size}"' if size else ""
    attrs += f' font-weight="{weight}"' if weight else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{attrs}>{escape(str(content))}</text>'


def polyline(points, color, width=1.5, dash=None):
    pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    extra = f' stroke-dasharray="{dash}" stroke-linecap="round"' if dash else ""
    return (f'<polyline points="{pts}" fill="none" {paint(stroke=color)} stroke-width="{width}"'
            f'{extra}/>')


def path(d, color, width=1.0, opacity=1.0):
    extra = f' opacity="{opacity}"' if opacity != 1.0 else ""
    return f'<path d="{d}" fill="none" {paint(stroke=color)} stroke-width="{width}"{extra}/>'


def circle(x, y, r, fill="none", stroke=None, width=1.0):
    return f'<circle cx="{x:.1f}" cy="{y:.1f}" r="{r}" {paint(fill, stroke)} stroke-width="{width}"/>'


def marker(shape, x, y, color, size=3.4):
    """A point marker — "circle", "triangle", "square" or "diamond" — outlined in the background
    colour, so that curves lying on each other still show each one's marks."""
    s = size
    if shape == "circle":
        return circle(x, y, s, fill=color, stroke=BG, width=0.8)
    corners = {"triangle": ((0, -1.2 * s), (1.1 * s, 0.8 * s), (-1.1 * s, 0.8 * s)),
               "square": ((-s, -s), (s, -s), (s, s), (-s, s)),
               "diamond": ((0, -1.3 * s), (1.3 * s, 0), (0, 1.3 * s), (-1.3 * s, 0))}[shape]
    d = "M" + " L".join(f"{x + a:.1f},{y + b:.1f}" for a, b in corners) + " z"
    return f'<path d="{d}" {paint(color, BG)} stroke-width="0.8"/>'


# ---- axes: round ticks -------------------------------------------------------------------------

def nice_ticks(lo, hi, count=5, integer=False):
    """Round ticks in [lo, hi]: multiples of a step of 1, 2, 2.5 or 5 × 10^k, about `count` of them
    (integer=True: steps of at least 1)."""
    if not (math.isfinite(lo) and math.isfinite(hi)) or hi < lo:
        raise ValueError(f"lo={lo!r}, hi={hi!r} is not allowed: ticks need finite lo <= hi")
    step = tick_step(hi - lo, count, integer)
    first, last = math.ceil(lo / step - 1e-9), math.floor(hi / step + 1e-9)
    return [_round(k * step, step) for k in range(first, last + 1)]


def tick_step(span, count=5, integer=False):
    """The round step (1, 2, 2.5 or 5 × 10^k) that cuts `span` into about `count` parts."""
    raw = span / max(count, 1) if span > 0 else 1.0
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw * (1 - 1e-9))
    return max(step, 1.0) if integer else step


def _round(value, step):
    decimals = max(0, -math.floor(math.log10(step) + 1e-9)) + 1
    return round(value, decimals) + 0.0                      # + 0.0: no "-0"


def tick_label(value):
    """A tick as short as it can be: 0, 2.5, 0.25, 1500, 1e-05."""
    if value == 0:
        return "0"
    if 1e-4 <= abs(value) < 1e6:
        return f"{value:.6f}".rstrip("0").rstrip(".")
    return f"{value:.3g}"


# ---- what a themed colour looks like -----------------------------------------------------------

_NAMED = {"white": "#ffffff", "black": "#000000", "transparent": "rgba(0,0,0,0)"}


def resolve(color, theme=None):
    """The (r, g, b, alpha) a CSS colour shows, r, g, b in 0..255: `theme` maps variable names
    ("--jp-layout-color0") to their values; a variable it lacks takes its fallback. Understands
    what this module writes: hex, rgb()/rgba(), var(--name, fallback), color-mix(in srgb, …)."""
    theme = theme or {}
    color = _NAMED.get(color.strip().lower(), color.strip())
    if color.startswith("#"):
        digits = color[1:]
        if len(digits) in (3, 4):
            digits = "".join(c * 2 for c in digits)
        alpha = int(digits[6:8], 16) / 255 if len(digits) == 8 else 1.0
        return tuple(int(digits[i:i + 2], 16) for i in (0, 2, 4)) + (alpha,)
    name, _, inner = color.partition("(")
    args = _split(inner[:-1]) if inner.endswith(")") else []
    if name == "var" and args:
        value = theme.get(args[0])
        if value is None:
            if len(args) < 2:
                raise ValueError(f"color={color!r} is not allowed: {args[0]} has no value and no fallback")
            value = ",".join(args[1:])
        return resolve(value, theme)
    if name in ("rgb", "rgba") and len(args) in (3, 4):
        alpha = float(args[3]) if len(args) == 4 else 1.0
        return tuple(float(a) for a in args[:3]) + (alpha,)
    if name == "color-mix" and len(args) == 3 and args[0].replace(" ", "") == "insrgb":
        (a, pa), (b, pb) = (_share(args[1]), _share(args[2]))
        pa = pa if pa is not None else (100 - pb if pb is not None else 50)
        ca, cb, t = resolve(a, theme), resolve(b, theme), pa / 100
        alpha = ca[3] * t + cb[3] * (1 - t)              # premultiplied, as CSS mixes
        rgb = tuple((ca[i] * ca[3] * t + cb[i] * cb[3] * (1 - t)) / alpha if alpha else 0.0
                    for i in range(3))
        return rgb + (alpha,)
    raise ValueError(f"color={color!r} is not allowed: a hex, rgb(), var() or color-mix(in srgb) "
                     f"colour was expected")


def hex_color(color, theme=None):
    """resolve(), as #rrggbb (an opaque colour; a translucent one as if on white)."""
    r, g, b, a = resolve(color, theme)
    return "#" + "".join(f"{round(c * a + 255 * (1 - a)):02x}" for c in (r, g, b))


@lru_cache(maxsize=256)
def _fallback(color):
    """hex_color(color) outside JupyterLab, computed once per colour (a frame paints hundreds)."""
    return hex_color(color)


def _split(args):
    """Split CSS arguments at the commas that are not inside brackets."""
    parts, depth, start = [], 0, 0
    for i, c in enumerate(args):
        depth += (c == "(") - (c == ")")
        if c == "," and depth == 0:
            parts.append(args[start:i].strip())
            start = i + 1
    return parts + [args[start:].strip()]


_PERCENT = re.compile(r"^(.*?)\s+([\d.]+)%$")


def _share(arg):
    match = _PERCENT.match(arg)
    return (match[1], float(match[2])) if match else (arg, None)
