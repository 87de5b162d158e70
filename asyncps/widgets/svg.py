"""A few SVG building blocks: enough to draw timelines and charts as plain strings, fast."""
from html import escape

COLORS = {"compute": "#4C78A8", "wait": "#BAB0AC", "pull": "#7F7F7F", "fresh": "#54A24B",
          "stale": "#E45756", "server": ("#EEF3FA", "#DCE6F2"), "now": "#333333", "lost": "#B2182B",
          "text": "#222222", "grid": "#E5E5E5"}
FONT = 'font-family="system-ui, -apple-system, Segoe UI, Helvetica, Arial, sans-serif"'


def svg(width, height, body, css_class):
    return (f'<svg xmlns="http://www.w3.org/2000/svg" class="{css_class}" width="{width}" '
            f'height="{height}" viewBox="0 0 {width} {height}" {FONT} font-size="11">'
            f'{_markers()}{"".join(body)}</svg>')


def _markers():
    heads = "".join(
        f'<marker id="aps-head-{name}" viewBox="0 0 10 10" refX="9" refY="5" markerWidth="8" '
        f'markerHeight="8" markerUnits="userSpaceOnUse" orient="auto-start-reverse"><path d="M0,0 L10,5 L0,10 z" fill="{color}"/></marker>'
        for name, color in (("pull", COLORS["pull"]), ("fresh", COLORS["fresh"]),
                            ("stale", COLORS["stale"]), ("compute", COLORS["compute"])))
    return f"<defs>{heads}</defs>"


def rect(x, y, w, h, fill, stroke="none", width=1.0, opacity=1.0, rx=2):
    return (f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(w, 0.0):.1f}" height="{h:.1f}" rx="{rx}" '
            f'fill="{fill}" stroke="{stroke}" stroke-width="{width}" opacity="{opacity}"/>')


def line(x1, y1, x2, y2, color, width=1.0, dash=None, head=None, opacity=1.0):
    extra = f' stroke-dasharray="{dash}"' if dash else ""
    extra += f' marker-end="url(#aps-head-{head})"' if head else ""
    return (f'<line x1="{x1:.1f}" y1="{y1:.1f}" x2="{x2:.1f}" y2="{y2:.1f}" stroke="{color}" '
            f'stroke-width="{width}" opacity="{opacity}"{extra}/>')


def text(x, y, content, color=None, size=None, anchor="start", weight=None, cls=None):
    attrs = f' fill="{color or COLORS["text"]}"'
    attrs += f' class="{cls}"' if cls else ""
    attrs += f' font-size="{size}"' if size else ""
    attrs += f' font-weight="{weight}"' if weight else ""
    return f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="{anchor}"{attrs}>{escape(str(content))}</text>'


def polyline(points, color, width=1.5, dash=None):
    pts = " ".join(f"{x:.1f},{y:.1f}" for x, y in points)
    extra = f' stroke-dasharray="{dash}"' if dash else ""
    return f'<polyline points="{pts}" fill="none" stroke="{color}" stroke-width="{width}"{extra}/>'


def path(d, color, width=1.0, opacity=1.0):
    return f'<path d="{d}" fill="none" stroke="{color}" stroke-width="{width}" opacity="{opacity}"/>'
