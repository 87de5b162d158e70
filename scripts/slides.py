#!/usr/bin/env python
"""The lecture as reveal.js decks that present from disk, with no network.

    python scripts/slides.py [OUT] [NAME ...]    default OUT: build/slides/; NAME: e.g. 02-asynchronous-ps

Each lecture notebook (executed, as committed) becomes OUT/NAME.slides.html, by nbconvert's
reveal.js template with what needs a network taken out:

- reveal.js itself (script, styles, the speaker-notes plugin) is a pinned copy from the npm
  registry (scripts/vendor.py) in OUT/reveal.js/, loaded by plain <script> tags: no require.js,
  no jQuery, no CDN;
- the white theme, whose fonts are in its stylesheet (nbconvert's default theme, simple, fetches
  its fonts from Google);
- no MathJax and no Mermaid (the lecture has no TeX and no diagrams), no widget manager: each
  widget shows its picture, the static fallback its output stores, as on the lecture site.

Open a deck by double-clicking it (file://): arrow keys or space move on, a fragment shows a
step at a time, `s` opens the speaker view (notes, the next slide, a clock), `f` goes full
screen. Copy the whole folder to present from another machine: the decks need reveal.js/ beside them.
"""
import importlib.util
import sys
from pathlib import Path

import nbformat
from jinja2 import DictLoader
from nbconvert import SlidesExporter

sys.path.insert(0, str(Path(__file__).resolve().parent))
import vendor  # noqa: E402  (scripts/vendor.py)

ROOT = Path(__file__).resolve().parents[1]
REVEAL = "reveal.js"             # the folder beside the decks


def _site():
    """scripts/site.py (its name is taken by Python's own `site` module)."""
    spec = importlib.util.spec_from_file_location("site_script", ROOT / "scripts" / "site.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


SITE = _site()

TEMPLATE = """{%- extends 'index.html.j2' -%}
{%- block html_head_js -%}{%- endblock html_head_js -%}
{%- block jupyter_widgets -%}{%- endblock jupyter_widgets -%}
{%- block html_head_js_mathjax -%}{%- endblock html_head_js_mathjax -%}
{%- block html_head_css -%}<style type="text/css">
.jp-OutputArea-output img, .jp-OutputArea-output svg { max-width: 100%; height: auto; }
.reveal .slides section { overflow-y: auto; max-height: 100%; }
.reveal .jp-Cell pre { white-space: pre-wrap; overflow-wrap: anywhere; }   /* long lines wrap, never cut */
</style>{%- endblock html_head_css -%}
{% block footer_js %}
<script src="REVEAL/dist/reveal.js"></script>
<script src="REVEAL/dist/plugin/notes.js"></script>
<script>
Reveal.initialize({
  controls: true, progress: true, history: true, hash: true,
  transition: "{{ reveal_transition }}", slideNumber: "{{ reveal_number }}",
  width: {{ reveal_width }}, height: {{ reveal_height }},
  plugins: [RevealNotes]
});
</script>
{% endblock footer_js %}
""".replace("REVEAL", REVEAL)


def exporter():
    exp = SlidesExporter(extra_loaders=[DictLoader({"offline.slides.j2": TEMPLATE})],
                         template_file="offline.slides.j2", embed_images=True, exclude_anchor_links=True,
                         reveal_url_prefix=REVEAL, reveal_theme="white")   # its fonts are inlined
    exp.display_data_priority = list(SITE.SHOWN)
    return exp


def build(out=ROOT / "build" / "slides", names=None, root=ROOT):
    """Write the decks of `names` (default: every lecture notebook) and reveal.js to `out`;
    returns the decks' paths."""
    site, out = SITE, Path(out)
    notebooks = site.lecture_order(root)
    lecture = {p.stem for p in notebooks}
    if names:
        unknown = sorted(set(names) - {p.stem for p in notebooks})
        if unknown:
            raise SystemExit(f"slides.py: no lecture notebook {', '.join(unknown)}: choose from "
                             f"{', '.join(p.stem for p in notebooks)}")
        notebooks = [p for p in notebooks if p.stem in names]
    vendor.install("reveal.js", out / REVEAL)
    exp, decks = exporter(), []
    deck_link = lambda m: f"{m[1]}{m[2]}.slides.html{m[3] or ''}" if m[2] in lecture else m[0]  # noqa: E731
    for path in notebooks:                     # a link to a lecture notebook goes to its deck
        nb = site._static(nbformat.read(path, as_version=4), link=deck_link)
        body, _ = exp.from_notebook_node(nb, resources={"metadata": {"name": site.title_of(nb, path.stem)}})
        deck = out / f"{path.stem}.slides.html"
        deck.write_text(body, encoding="utf-8")
        decks.append(deck)
    return decks


if __name__ == "__main__":
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "build" / "slides"
    decks = build(out, sys.argv[2:] or None)
    print(f"{len(decks)} decks in {out}/, with reveal.js {vendor.PACKAGES['reveal.js'][1]} beside them: "
          f"open one from disk (file://); no network needed")
