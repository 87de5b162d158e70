#!/usr/bin/env python
"""The lecture site: the executed lecture, the Playground and the assignments' student copies as
static HTML pages that open from disk, with no server and no network.

    python scripts/site.py [OUT]      default OUT: site/ (open OUT/index.html in a browser)

The pages are nbconvert's JupyterLab-styled HTML of the committed notebooks (notebooks/*.ipynb,
executed; exercises/*.ipynb, the student copies: never solutions/). What needs a network or a
kernel is left out on purpose:

- no script from a CDN: not require.js, not MathJax, not Mermaid, not the widget manager (the
  lecture has no TeX; a widget is never live here);
- each widget shows its static fallback, the one its `_repr_mimebundle_` stores next to the
  widget view (text/html, else image/svg+xml): nbconvert's default would pick the widget view,
  which without stored widget state is an empty box. Where the fallback is animated SVG/CSS it
  plays in the page; a widget with no fallback says it runs in JupyterLab instead of showing
  its Python repr;
- links between notebooks (`02-asynchronous-ps.ipynb`, `../exercises/02-async-push.ipynb`) point
  at the pages; every page has links to the previous page, the index and the next page.

The order of the lecture is the one notebooks/README.md gives (a notebook it does not name comes
after, by name); then the Playground, then the assignments by number.
"""
import html
import re
import shutil
import sys
from dataclasses import dataclass
from pathlib import Path

import nbformat
from jinja2 import DictLoader
from nbconvert import HTMLExporter

from asyncps.assignments import MARKERS

ROOT = Path(__file__).resolve().parents[1]

WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
# what a page may show of an output, best first: the widget view and JavaScript are never chosen
SHOWN = ["text/html", "text/markdown", "image/svg+xml", "image/png", "image/jpeg", "text/plain"]
NO_FALLBACK = ('<div class="site-widget-note">An interactive widget: it runs in JupyterLab '
               '(<code>make lab</code>); this page has no static picture of it.</div>')

TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js_requirejs -%}{%- endblock html_head_js_requirejs -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_js_mermaidjs -%}{%- endblock html_head_js_mermaidjs -%}
{%- block extra_css -%}<style type="text/css">
nav.site-nav { display: flex; gap: 1.5em; align-items: baseline; flex-wrap: wrap;
  padding: 0.6em 1em; margin: 0 0 0.5em 0; font-family: var(--jp-ui-font-family);
  font-size: var(--jp-ui-font-size1); background: var(--jp-layout-color2);
  border-bottom: 1px solid var(--jp-border-color2); }
nav.site-nav a { color: var(--jp-content-link-color); text-decoration: none; }
nav.site-nav a:hover { text-decoration: underline; }
nav.site-nav .site-here { color: var(--jp-ui-font-color1); font-weight: 600; }
nav.site-nav .site-none { color: var(--jp-ui-font-color3); }
.site-widget-note { font-style: italic; color: var(--jp-ui-font-color2); padding: 0.3em 0; }
.jp-OutputArea-output svg:not(svg svg) { max-width: 100%; height: auto; }
</style>{%- endblock extra_css -%}
{%- block body_header -%}{{ super() }}{{ resources.site_nav }}{%- endblock body_header -%}
{%- block body_footer -%}{{ resources.site_nav }}{{ super() }}{%- endblock body_footer -%}
"""


@dataclass
class Page:
    source: Path          # the notebook
    target: str           # its page, relative to the site's root: notebooks/NAME.html
    title: str            # its first heading
    part: str             # "lecture", "playground" or "exercises"


def lecture_order(root=ROOT):
    """The lecture notebooks in the order notebooks/README.md names them; any it does not name
    come after, by name."""
    notebooks = {p.stem: p for p in (root / "notebooks").glob("[0-9]*.ipynb")}
    readme = (root / "notebooks" / "README.md").read_text(encoding="utf-8")
    named = [name for name in dict.fromkeys(re.findall(r"`([0-9][0-9a-z-]*)`", readme))
             if name in notebooks]
    return [notebooks[n] for n in named] + [notebooks[n] for n in sorted(set(notebooks) - set(named))]


def title_of(nb, fallback):
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            for line in cell.source.splitlines():
                if line.startswith("#"):
                    return line.lstrip("#").strip().replace("`", "")
    return fallback


def pages(root=ROOT):
    """Every page of the site, in reading order."""
    parts = [(p, "lecture") for p in lecture_order(root)]
    parts += [(root / "notebooks" / "playground.ipynb", "playground")]
    parts += [(p, "exercises") for p in sorted((root / "exercises").glob("*.ipynb"))]
    return [Page(path, f"{path.parent.name}/{path.stem}.html",
                 title_of(nbformat.read(path, as_version=4), path.stem), part)
            for path, part in parts]


def _refuse_answers(nb, path):
    """The site is for students: a notebook holding a solution region or a hidden test stops it."""
    for cell in nb.cells:
        for begin, end in MARKERS.values():
            if begin in cell.source or end in cell.source:
                raise ValueError(f"{path}: holds {begin!r}: the site publishes student copies "
                                 f"only (exercises/, generated by `make exercises`), never solutions")


_LINK = re.compile(r"""(\]\(|href=["'])(?!https?:|mailto:|#)([^)"'\s]*?)\.ipynb(#[^)"'\s]*)?""")


def _page_link(m):
    return f"{m[1]}{m[2]}.html{m[3] or ''}"


def _static(nb, link=_page_link):
    """The notebook as the site shows it: links to pages, widgets by their static fallback.
    `link(match)`: what a link to a notebook becomes (scripts/slides.py: a link to its deck)."""
    nb.metadata.pop("widgets", None)
    for cell in nb.cells:
        if cell.cell_type == "markdown":
            cell.source = _LINK.sub(link, cell.source)
        for output in cell.get("outputs", []):
            data = output.get("data", {})
            if WIDGET_VIEW in data and not any(k in data for k in SHOWN[:-1]):
                output["data"] = {"text/html": NO_FALLBACK}
    return nb


def _nav(pages, i, prefix):
    def link(page, label):
        if page is None:
            return f'<span class="site-none">{label}</span>'
        return (f'<a href="{prefix}{page.target}" title="{html.escape(page.title)}">'
                f'{label}</a>')
    before = pages[i - 1] if i > 0 else None
    after = pages[i + 1] if i + 1 < len(pages) else None
    return (f'<nav class="site-nav">{link(before, "◀ previous")}'
            f'<a href="{prefix}index.html">index</a>{link(after, "next ▶")}'
            f'<span class="site-here">{html.escape(pages[i].title)}</span></nav>')


def exporter():
    exp = HTMLExporter(template_name="lab", extra_loaders=[DictLoader({"site.html.j2": TEMPLATE})],
                       template_file="site.html.j2", embed_images=True, exclude_anchor_links=True)
    exp.display_data_priority = list(SHOWN)
    return exp


INDEX = """<!DOCTYPE html>
<html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1.0">
<title>Asynchronous parameter servers: the lecture</title>
<style>
body {{ font-family: system-ui, -apple-system, "Segoe UI", Helvetica, Arial, sans-serif;
  max-width: 46em; margin: 2em auto; padding: 0 1em; line-height: 1.5; color: #1f1f1f;
  background: #ffffff; }}
a {{ color: #0b57d0; }} h2 {{ margin-top: 1.6em; }} code {{ font-size: 0.95em; }}
@media (prefers-color-scheme: dark) {{ body {{ color: #e6e6e6; background: #111111; }}
  a {{ color: #8ab4f8; }} }}
</style></head>
<body>
<h1>Asynchronous parameter servers</h1>
<p>The lecture as executed, read in this order; then the Playground; then the assignments
(the student copies: run them in JupyterLab, <code>make lab</code>, and check them with
<code>python -m asyncps.check exercises/NAME.ipynb</code>). Widgets here are pictures: the
timelines play by themselves; to drive them, run the notebooks.</p>
{sections}
</body></html>
"""
HEADINGS = {"lecture": "The lecture", "playground": "The Playground", "exercises": "The assignments"}


def index_html(pages):
    sections = []
    for part, heading in HEADINGS.items():
        items = "\n".join(f'<li><a href="{p.target}">{html.escape(p.title)}</a> '
                          f'<code>{p.source.name}</code></li>' for p in pages if p.part == part)
        sections.append(f"<h2>{heading}</h2>\n<ol>\n{items}\n</ol>")
    return INDEX.format(sections="\n".join(sections))


def build(out=ROOT / "site", root=ROOT):
    """Write the site to `out` (replaced if it exists); return its pages."""
    out, all_pages = Path(out), pages(root)
    notebooks = [nbformat.read(page.source, as_version=4) for page in all_pages]
    for nb, page in zip(notebooks, all_pages):
        _refuse_answers(nb, page.source)               # before anything is written
    if out.exists():
        shutil.rmtree(out)
    exp = exporter()
    for i, (nb, page) in enumerate(zip(notebooks, all_pages)):
        body, _ = exp.from_notebook_node(_static(nb), resources={
            "metadata": {"name": page.title}, "site_nav": _nav(all_pages, i, "../")})
        target = out / page.target
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_text(body, encoding="utf-8")
    (out / "index.html").write_text(index_html(all_pages), encoding="utf-8")
    return all_pages


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "site"
    built = build(out)
    print(f"wrote {out / 'index.html'} and {len(built)} pages (open it from disk: no server needed)")
