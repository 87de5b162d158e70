"""Every widget of every lecture notebook as JupyterLab draws it, at 700, 1000 and 1400 px wide, in
the light and the dark theme: nothing overflows its output area, nothing is cut off (a label of
the picture at the picture's edge, a control's label ending in "…"), and every label and caption
meets WCAG AA contrast against what is drawn behind it.

How the widgets get there without running the notebooks in the browser. JupyterLab shows a
committed notebook's widget outputs only when it holds the widgets' state; without it (the
committed notebooks drop it: it churns) and before Run All, JupyterLab shows the sanitised
text/html fallback instead. Running every cell in the browser would cost minutes (08a, 06, 07 run
real processes). So the lecture notebooks that hold widgets are executed here, by nbclient, two at
a time, keeping the widget state (nbclient's default), and signed as trusted in a private data
dir: JupyterLab then draws each widget from its stored state, exactly as after Run All, with no
cell run in the browser. One JupyterLab server serves them all; each notebook is opened once and
looked at in both themes and three widths (the window is resized, the page is not reloaded).

Screenshots of each widget, for each theme and width, go to build/browser/visual/ (build/ is
ignored by git), named THEME-WIDTH/NOTEBOOK-N.png.
"""
import concurrent.futures
import json
import os
import subprocess
import sys
import time
import urllib.request
from pathlib import Path

import nbformat
import pytest

from servers import CHROME_ARGS, CHROMIUM, lab, require_browser

pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
ARTIFACTS = ROOT / "build" / "browser" / "visual"
WIDTHS = (700, 1000, 1400)
THEMES = ("JupyterLab Light", "JupyterLab Dark")
WIDGET_VIEW = "application/vnd.jupyter.widget-view+json"
AA, AA_LARGE = 4.5, 3.0          # WCAG 2.x AA: normal text; large text (>= 24 px, or >= 18.66 px bold)


def widget_count(path):
    """The widgets a committed notebook shows: each left its picture (class asyncps-static) in
    text/html; its widget view is dropped from the committed file (scripts/notebooks.py)."""
    return sum("asyncps-static" in o.get("data", {}).get("text/html", "")
               for c in nbformat.read(path, 4).cells for o in c.get("outputs", []))


LECTURE = [p for p in [*sorted((ROOT / "notebooks").glob("[0-9]*.ipynb")),
                       ROOT / "notebooks" / "playground.ipynb"] if widget_count(p)]

EXECUTE = """
import os, sys
import nbformat
from nbformat.sign import NotebookNotary
from asyncps import grade
os.environ["TQDM_DISABLE"] = "1"
source, target, data_dir = sys.argv[1:]
nb = nbformat.read(source, 4)
grade.execute(nb, timeout=300, store_widget_state=True,    # a kernel on Unix sockets
              resources={"metadata": {"path": os.path.dirname(target)}})
NotebookNotary(data_dir=data_dir).sign(nb)
nbformat.write(nb, target)
"""


# widgets that break each rule once, and one that keeps them: the checks must see the first four
BAD = "bad-widgets.ipynb"
BAD_WIDGETS = """import ipywidgets as widgets
widgets.VBox([
    widgets.HTML('<div style="width: 2400px">a row far wider than any output area</div>'),
    widgets.HTML('<svg width="200" height="40" viewBox="0 0 200 40"><text x="150" y="20" '
                 'fill="#222222">cut off at the edge of the picture</text></svg>'),
    widgets.Button(description='a label far longer than its button', layout=widgets.Layout(width='90px')),
    widgets.HTML('<span style="color: #c8c8c8">too pale to read</span>'),
    widgets.HTML('<span style="color: #222222; background: #ffffff">dark enough</span>'),
])"""


@pytest.fixture(scope="module")
def course(tmp_path_factory):
    """A folder of the lecture notebooks that hold widgets, executed with their widget state and
    trusted (signed in `data`, the Jupyter data dir the server is given)."""
    require_browser()
    base = tmp_path_factory.mktemp("visual")
    root, data = base / "root", base / "data"
    root.mkdir()
    data.mkdir()
    env = dict(os.environ, TQDM_DISABLE="1", JUPYTER_DATA_DIR=str(data))

    def execute(path):
        done = subprocess.run([sys.executable, "-c", EXECUTE, str(path), str(root / path.name), str(data)],
                              capture_output=True, text=True, timeout=600, env=env)
        assert done.returncode == 0, f"{path.name} did not run:\n{done.stderr[-3000:]}"

    bad = nbformat.v4.new_notebook(cells=[nbformat.v4.new_code_cell(BAD_WIDGETS)])
    bad.metadata["kernelspec"] = {"name": "python3", "display_name": "Python 3 (ipykernel)",
                                  "language": "python"}
    nbformat.write(bad, base / BAD)
    start = time.perf_counter()
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        list(pool.map(execute, [*LECTURE, base / BAD]))
    print(f"\nexecuted {len(LECTURE) + 1} notebooks in {time.perf_counter() - start:.0f} s")
    return base, root, data


@pytest.fixture(scope="module")
def lab_page(course):
    """One JupyterLab server for the module, one Chromium page, the file browser folded away."""
    from playwright.sync_api import sync_playwright

    base, root, data = course
    saved = os.environ.get("JUPYTER_DATA_DIR")
    os.environ["JUPYTER_DATA_DIR"] = str(data)        # servers.lab passes os.environ on
    try:
        server = lab(root, base / "work-dir", LECTURE[0].name)
    finally:
        if saved is None:
            os.environ.pop("JUPYTER_DATA_DIR")
        else:
            os.environ["JUPYTER_DATA_DIR"] = saved
    try:
        with sync_playwright() as p:
            browser = p.chromium.launch(executable_path=CHROMIUM, headless=True, args=CHROME_ARGS)
            page = browser.new_page(viewport={"width": WIDTHS[-1], "height": 1000})
            page.set_default_timeout(30_000)
            try:
                yield server, page
            finally:
                browser.close()
    finally:
        server.stop()


def _api(server, method, path):
    request = urllib.request.Request(f"http://127.0.0.1:{server.port}{path}", method=method,
                                     headers={"Authorization": f"token {server.token}"})
    with urllib.request.urlopen(request, timeout=10) as response:
        body = response.read()
    return json.loads(body) if body else None


def _kernel_idle(server, name, seconds=240):
    """Wait until the kernel JupyterLab started for notebook `name` reads idle. ipywidgets draws a
    notebook's saved widget state only once that kernel is ready and has answered a comm_info
    request (jupyterlab_widgets' restoreWidgets awaits sessionContext.ready, then loads from the
    kernel, then from the notebook): on a loaded machine the kernel's start alone took over the
    60 s the test gave the widgets (CI: "0 of its 1 widgets drawn"; reproduced by making the
    server's kernels sleep 65 s before they start)."""
    deadline, states = time.monotonic() + seconds, []
    while time.monotonic() < deadline:
        states = [s["kernel"]["execution_state"] for s in _api(server, "GET", "/api/sessions")
                  if s["path"].endswith(name) and s.get("kernel")]
        if "idle" in states:
            return
        time.sleep(0.5)
    raise AssertionError(f"{name}: its kernel did not read idle within {seconds} s (states seen: {states})")


def _close_kernels(server):
    """The kernels JupyterLab started on opening the notebooks: nothing runs in them."""
    for session in _api(server, "GET", "/api/sessions"):
        _api(server, "DELETE", f"/api/sessions/{session['id']}")


def _open(page, server, name):
    from playwright.sync_api import expect

    page.set_viewport_size({"width": WIDTHS[-1], "height": 1000})
    page.goto(f"http://127.0.0.1:{server.port}/lab/tree/{name}?reset&token={server.token}")
    notebook = page.locator(".jp-NotebookPanel:not(.lm-mod-hidden)")
    expect(notebook.locator(".jp-Cell").first).to_be_visible(timeout=90_000)
    left = page.locator(".jp-SideBar.jp-mod-left .lm-TabBar-tab.lm-mod-current")
    if left.count():
        left.first.click()                            # fold the file browser away
    page.add_style_tag(content=UNMARK_DISCONNECTED)
    return notebook


# A widget drawn from stored state has no kernel behind it: ipywidgets marks it "disconnected" with
# a red broken-link icon before each view (which also widens it). A learner who ran the cells never
# sees that mark, so it is hidden here; nothing else about the widgets is changed.
UNMARK_DISCONNECTED = (".jupyter-widgets-disconnected::before "
                       "{ content: none !important; display: none !important; }")


def _theme(page, theme):
    from playwright.sync_api import expect

    if page.evaluate("document.body.dataset.jpThemeName") == theme:
        return
    page.locator(".lm-MenuBar-itemLabel", has_text="Settings").first.click()
    page.locator(".lm-Menu-itemLabel", has_text="Theme").first.click()
    page.locator(".lm-Menu-itemLabel", has_text=theme).first.click()
    expect(page.locator(f'body[data-jp-theme-name="{theme}"]')).to_be_attached(timeout=30_000)
    page.wait_for_timeout(500)                        # the theme's stylesheet applies


def _resize(page, width):
    """The window `width` px wide, and tall enough to hold the tallest widget whole (for its
    screenshot, and so that every text of it can be looked at where it is drawn)."""
    frames = "new Promise(r => requestAnimationFrame(() => requestAnimationFrame(r)))"
    page.set_viewport_size({"width": width, "height": 1000})
    page.evaluate(frames)
    tallest = page.evaluate("""() => Math.max(0, ...[...document.querySelectorAll(
        '.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output')].map(a => a.offsetHeight))""")
    if tallest + 200 > 1000:
        page.set_viewport_size({"width": width, "height": min(tallest + 200, 4000)})
        page.evaluate(frames)


# In the page: mark the notebook's widget output areas (data-visual-index), then for each one list
# what overflows it and which texts miss AA contrast. Colours are read back through a canvas, so
# any CSS colour (rgb(), color(srgb …), color-mix() results) becomes sRGB bytes.
CHECK = r"""
([AA, AA_LARGE]) => {
  const panel = document.querySelector('.jp-NotebookPanel:not(.lm-mod-hidden)');
  const areas = [...panel.querySelectorAll('.jp-OutputArea-output')].filter(a =>
      a.querySelector('.jupyter-widgets') && !a.parentElement.closest('.jp-OutputArea-output'));
  const ctx = Object.assign(document.createElement('canvas'), {width: 1, height: 1})
      .getContext('2d', {willReadFrequently: true});
  const rgba = (css) => {
    if (!css || css === 'none' || css.startsWith('url(')) return null;
    ctx.clearRect(0, 0, 1, 1); ctx.fillStyle = '#00000000'; ctx.fillStyle = css;
    ctx.fillRect(0, 0, 1, 1);
    const [r, g, b, a] = ctx.getImageData(0, 0, 1, 1).data;
    return [r, g, b, a / 255];
  };
  const opacity = (el) => {
    let o = 1;
    for (let e = el; e && e !== document.documentElement; e = e.parentElement)
      o *= parseFloat(getComputedStyle(e).opacity);
    return o;
  };
  const luminance = ([r, g, b]) => {
    const c = [r, g, b].map(v => v / 255).map(v => v <= 0.03928 ? v / 12.92 : ((v + 0.055) / 1.055) ** 2.4);
    return 0.2126 * c[0] + 0.7152 * c[1] + 0.0722 * c[2];
  };
  const over = (top, [r, g, b, a]) => [0, 1, 2].map(i => top[i] * a + [r, g, b][i] * (1 - a));
  const shapes = new Set(['rect', 'path', 'circle', 'ellipse', 'polygon']);
  const paintOf = (el, x, y) => {                   // [r, g, b, a] that `el` paints at (x, y)
    const s = getComputedStyle(el);
    if (el instanceof SVGElement) {
      if (el.tagName === 'svg') return rgba(s.backgroundColor);
      if (!shapes.has(el.tagName)) return null;
      const at = new DOMPoint(x, y).matrixTransform(el.getScreenCTM().inverse());
      const [paint, alpha] = el.isPointInFill(at) ? [s.fill, s.fillOpacity]
        : el.isPointInStroke(at) ? [s.stroke, s.strokeOpacity] : [null, 0];
      const c = rgba(paint);
      return c && [c[0], c[1], c[2], c[3] * parseFloat(alpha) * opacity(el)];
    }
    const c = rgba(s.backgroundColor);
    return c && [c[0], c[1], c[2], c[3] * opacity(el)];
  };
  const backgroundAt = (el, x, y) => {
    const layers = [];
    for (const under of document.elementsFromPoint(x, y)) {
      if (el.contains(under) && (under !== el || el instanceof SVGElement)) continue;   // its text
      const c = paintOf(under, x, y);
      if (!c || c[3] === 0) continue;
      layers.push(c);
      if (c[3] >= 0.999) break;
    }
    let color = [255, 255, 255];                    // the canvas behind everything
    for (const layer of layers.reverse()) color = over(layer, [...color, 1]);
    return color.map(Math.round);
  };
  // what is behind a text: the colour found most often on a 5 x 3 grid over its box (a thin line
  // crossing the text, or the edge of a bar, is not its background)
  const background = (el, r) => {
    const seen = new Map();
    for (const fx of [0.1, 0.3, 0.5, 0.7, 0.9]) for (const fy of [0.25, 0.5, 0.75]) {
      const c = backgroundAt(el, r.left + fx * r.width, r.top + fy * r.height), key = c.join();
      seen.set(key, [c, (seen.get(key)?.[1] || 0) + 1]);
    }
    return [...seen.values()].sort((a, b) => b[1] - a[1])[0][0];
  };
  const visible = (el) => {
    const r = el.getBoundingClientRect(), s = getComputedStyle(el);
    return r.width > 0 && r.height > 0 && s.visibility !== 'hidden' && s.display !== 'none'
      && opacity(el) > 0;
  };
  const name = (el) => {
    const cls = (el.getAttribute('class') || '').split(/\s+/)
      .filter(c => c && !/^(lm-|jupyter-widgets)/.test(c)).slice(0, 2).join('.');
    const text = (el.textContent || '').trim().replace(/\s+/g, ' ').slice(0, 40);
    return `<${el.tagName.toLowerCase()}${cls ? '.' + cls : ''}>${text ? ' "' + text + '"' : ''}`;
  };
  const texts = (area) => [...area.querySelectorAll('*')].filter(el =>
      el.tagName === 'text' || (!(el instanceof SVGElement) && el.tagName !== 'STYLE' &&
        [...el.childNodes].some(n => n.nodeType === 3 && n.textContent.trim())));
  return areas.map((area, index) => {
    area.setAttribute('data-visual-index', index);
    area.scrollIntoView({block: 'start'});
    const box = area.getBoundingClientRect(), overflow = [], contrast = [];
    if (area.scrollWidth > area.clientWidth + 1)
      overflow.push(`the output area scrolls: ${area.scrollWidth} px of content in ${area.clientWidth} px`);
    const reported = [];
    for (const el of area.querySelectorAll('*')) {
      if (!visible(el) || reported.some(r => r.contains(el))) continue;
      const r = el.getBoundingClientRect();
      const svg = el instanceof SVGElement && el.tagName !== 'svg' ? el.ownerSVGElement : null;
      const frame = svg ? svg.getBoundingClientRect() : box;
      const where = svg ? 'its picture' : 'the output area';
      const beyond = Math.max(r.right - frame.right, frame.left - r.left);
      if (beyond > 1) {
        overflow.push(`${name(el)} reaches ${Math.round(beyond)} px beyond ${where} `
                      + `(${Math.round(frame.width)} px wide)`);
        reported.push(el);
      }
    }
    for (const el of texts(area)) {
      if (!visible(el)) continue;
      if (el.closest(':disabled')) continue;    // WCAG 1.4.3 exempts inactive controls (a run's end)
      if (!(el instanceof SVGElement) && getComputedStyle(el).overflowX !== 'visible'
          && el.scrollWidth > el.clientWidth + 1)         // a label cut short ("SSP: clocks…")
        overflow.push(`${name(el)} is cut off: ${el.scrollWidth} px of text in ${el.clientWidth} px`);
      let r = el.getBoundingClientRect();
      if (r.top < 0 || r.bottom > innerHeight) {
        el.scrollIntoView({block: 'center'});
        r = el.getBoundingClientRect();
      }
      const s = getComputedStyle(el);
      const ink = rgba(el.tagName === 'text' ? s.fill : s.color);
      if (!ink || ink[3] === 0) continue;
      const alpha = ink[3] * (el.tagName === 'text' ? parseFloat(s.fillOpacity) : 1) * opacity(el);
      const bg = background(el, r);
      const text = [0, 1, 2].map(i => ink[i] * alpha + bg[i] * (1 - alpha));
      const [l1, l2] = [luminance(text), luminance(bg)].sort((a, b) => b - a);
      const ratio = (l1 + 0.05) / (l2 + 0.05);
      let size = parseFloat(s.fontSize);
      const svg = el.ownerSVGElement;
      if (svg && svg.viewBox.baseVal && svg.viewBox.baseVal.width)
        size *= svg.getBoundingClientRect().width / svg.viewBox.baseVal.width;
      const bold = parseInt(s.fontWeight) >= 700;
      const needed = size >= 24 || (bold && size >= 18.66) ? AA_LARGE : AA;
      if (ratio < needed)
        contrast.push(`${name(el)}: ${ratio.toFixed(2)}:1 < ${needed}:1 (text rgb(${text.map(Math.round)}) `
                      + `on rgb(${bg.map(Math.round)}), ${size.toFixed(1)} px)`);
    }
    return {index, overflow, contrast};
  });
}
"""


# how many widgets the notebook shows drawn (top-level output areas holding a widget view)
CHECK_COUNT = r"""
() => [...document.querySelectorAll('.jp-NotebookPanel:not(.lm-mod-hidden) .jp-OutputArea-output')]
  .filter(a => a.querySelector('.jupyter-widgets') && !a.parentElement.closest('.jp-OutputArea-output')
               && !a.textContent.includes('Error displaying widget')).length
"""


@pytest.mark.timeout(600)
@pytest.mark.parametrize("notebook", [p.name for p in LECTURE], ids=[p.stem for p in LECTURE])
def test_widgets_fit_and_read_at_every_width_in_both_themes(lab_page, notebook):
    server, page = lab_page
    expected = widget_count(ROOT / "notebooks" / notebook)
    panel = _open(page, server, notebook)
    try:
        _kernel_idle(server, notebook)
        deadline = time.time() + 60
        while time.time() < deadline and page.evaluate(CHECK_COUNT) < expected:
            time.sleep(0.2)
        assert page.evaluate(CHECK_COUNT) == expected, \
            f"{notebook}: {page.evaluate(CHECK_COUNT)} of its {expected} widgets drawn"
        assert not panel.get_by_text("Error displaying widget").count(), f"{notebook}: a widget failed"
        problems = []
        current = page.evaluate("document.body.dataset.jpThemeName")
        for theme in sorted(THEMES, key=lambda t: t != current):     # the current one first
            _theme(page, theme)
            for width in WIDTHS:
                _resize(page, width)
                found = page.evaluate(CHECK, [AA, AA_LARGE])
                folder = ARTIFACTS / f"{theme.split()[-1].lower()}-{width}"
                folder.mkdir(parents=True, exist_ok=True)
                for area in found:
                    panel.locator(f'[data-visual-index="{area["index"]}"]').screenshot(
                        path=str(folder / f"{Path(notebook).stem}-{area['index']}.png"))
                    for kind in ("overflow", "contrast"):
                        problems += [f"{theme}, {width} px, widget {area['index']}: {kind}: {p}"
                                     for p in area[kind]]
        assert problems == [], f"{notebook}: {len(problems)} problems:\n" + "\n".join(problems[:60])
    finally:
        _close_kernels(server)


@pytest.mark.timeout(300)
def test_the_checks_see_an_overflow_a_cut_off_label_and_pale_text(lab_page):
    server, page = lab_page
    panel = _open(page, server, BAD)
    try:
        from playwright.sync_api import expect
        _kernel_idle(server, BAD)
        expect(panel.locator(".jp-OutputArea-output .widget-html").first).to_be_visible(timeout=60_000)
        _theme(page, "JupyterLab Light")
        _resize(page, 1000)
        [found] = page.evaluate(CHECK, [AA, AA_LARGE])
        overflow, contrast = "\n".join(found["overflow"]), "\n".join(found["contrast"])
        assert "far wider" in overflow and "beyond the output area" in overflow, overflow
        assert "cut off at the edge" in overflow and "beyond its picture" in overflow, overflow
        assert "a label far longer" in overflow and "is cut off" in overflow, overflow
        assert "too pale to read" in contrast and "dark enough" not in contrast, contrast
    finally:
        _close_kernels(server)
