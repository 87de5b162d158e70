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

Every slide fits the deck's 1280×720 slide: once the deck has loaded, scripts/slides_fit.js
(inlined in each deck) measures each slide as it is shown and splits one that is too tall into
vertical sub-slides, at the last cell, output, paragraph, list item, table row or line of code
that fits; text keeps its size, only a picture taller than a whole slide is scaled down.
tests/browser/test_slides_fit.py checks every slide of every deck.

Open a deck by double-clicking it (file://): arrow keys or space move on, through the
sub-slides too (reveal.js's linear navigation), a fragment shows a step at a time, `s` opens the
speaker view (notes, the next slide, a clock), `f` goes full screen. Copy the whole folder to
present from another machine: the decks need reveal.js/ beside them.
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
WIDTH, HEIGHT = 1280, 720        # a slide's size: what does not fit goes on to sub-slides (slides_fit.js)


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
.reveal div.highlight > pre { box-sizing: border-box; }    /* padding inside its width: no sideways scroll */
/* no scroll bar inside a cell: what is too big shows, and the deck's test sees it */
.reveal .jp-RenderedHTMLCommon, .reveal .jp-InputArea, .reveal .jp-OutputArea-output { overflow: visible; }
/* a slide is 1280 px wide on any screen: its cells keep the wide layout (the prompt beside the
   cell) on a narrow one too, so the split into sub-slides is the same on every screen */
@media only screen and (max-width: 760px) {
  .reveal .jp-InputPrompt, .reveal .jp-OutputPrompt { display: table-cell; text-align: right; }
  .reveal .jp-InputArea-editor, .reveal .jp-OutputArea-child .jp-OutputArea-output {
    display: table-cell; margin-left: 0; }
}
</style>{%- endblock html_head_css -%}
{% block footer_js %}
<script src="REVEAL/dist/reveal.js"></script>
<script src="REVEAL/dist/plugin/notes.js"></script>
<script>
{% raw %}/*FIT*/{% endraw %}
</script>
<script>
const address = window.location.hash;     // counted after the split: went to once it is done
const loaded = new Promise(done => document.readyState === "complete" ? done()
                                   : window.addEventListener("load", done));
Promise.all([Reveal.initialize({
  controls: true, progress: true, history: true, hash: true, navigationMode: "linear",
  transition: "{{ reveal_transition }}", slideNumber: "{{ reveal_number }}",
  width: {{ reveal_width }}, height: {{ reveal_height }},
  plugins: [RevealNotes]
}), loaded, document.fonts.ready]).then(() => fitSlides(Reveal, address));
</script>
{% endblock footer_js %}
""".replace("REVEAL", REVEAL).replace("/*FIT*/", (ROOT / "scripts" / "slides_fit.js").read_text("utf-8"))


def exporter():
    exp = SlidesExporter(extra_loaders=[DictLoader({"offline.slides.j2": TEMPLATE})],
                         template_file="offline.slides.j2", embed_images=True, exclude_anchor_links=True,
                         reveal_url_prefix=REVEAL, reveal_theme="white",
                         reveal_width=str(WIDTH), reveal_height=str(HEIGHT))   # its fonts are inlined
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
