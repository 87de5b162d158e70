// Every slide fits the deck's size (scripts/slides.py inlines this file in each deck).
//
// Once reveal.js is ready, with fonts and pictures loaded, each slide taller than the deck is
// measured where it is shown and split into vertical sub-slides: at the last cell, output,
// paragraph, list item, table row or line of code that fits (in code, after a blank line if one
// is near). Nothing is cut and no text is made smaller: the rest goes on the next sub-slide, in
// empty copies of the elements it sat in, so it keeps its styles (a split table repeats its
// header, a split numbered list goes on counting, the rest of a fragment shows with its start).
// Only a picture taller than a whole slide is scaled down to fit. Nothing here makes a slide
// narrower: content wider than the slide stays so, and tests/browser/test_slides_fit.py names it.
// Then the deck goes to the slide its address names, counted after the split.
(function () {
  "use strict";
  const ATOMIC = /^(P|H[1-6]|IMG|SVG|CANVAS|VIDEO|IFRAME|HR|TR|THEAD|TFOOT|CAPTION|FIGURE|MATH|DETAILS)$/;
  const PICTURE = /^(IMG|SVG|CANVAS|VIDEO)$/;
  const HEADING = /^H[1-6]$/;

  const px = (style, name) => parseFloat(style.getPropertyValue(name)) || 0;
  const tag = (el) => el.tagName.toUpperCase();
  const shown = (el) => getComputedStyle(el).display !== "none" && !el.matches("aside.notes");

  // Lines of a <pre>: text nodes split after each newline; a line starts at the first text node
  // after one that ends in "\n".
  function lines(pre, ctx, out) {
    const walker = document.createTreeWalker(pre, NodeFilter.SHOW_TEXT);
    const texts = [];
    for (let t = walker.nextNode(); t; t = walker.nextNode()) texts.push(t);
    const starts = [], blank = [];          // blank[j]: line j - 1 holds only white space
    let atStart = true, inked = true;
    for (let t of texts) {
      while (true) {
        if (atStart && t.data.length) { starts.push(t); blank.push(!inked); inked = false; }
        if (t.data.length) atStart = false;
        const i = t.data.indexOf("\n");
        if (t.data.slice(0, i < 0 ? undefined : i).trim()) inked = true;
        if (i < 0) break;
        atStart = true;
        if (i === t.data.length - 1) break;
        t = t.splitText(i + 1);
      }
    }
    const range = document.createRange();
    const trailing = ctx.trailing(pre), before = out.length;
    starts.forEach((start, j) => {
      range.setStart(start, 0);
      if (j + 1 < starts.length) range.setEnd(starts[j + 1], 0);
      else range.setEnd(pre, pre.childNodes.length);
      const rects = Array.from(range.getClientRects());
      if (!rects.length) return;
      out.push({node: start, top: Math.min(...rects.map((r) => r.top)),
                bottom: Math.max(...rects.map((r) => r.bottom)),
                trailing, heading: false, picture: false, pre, blank: blank[j]});
    });
    return out.length > before;                // none: a <pre> with no text is one piece
  }

  function leaf(el, ctx) {
    const r = el.getBoundingClientRect();
    if (!r.width && !r.height) return null;
    return {node: el, top: r.top, bottom: r.bottom,
            trailing: ctx.trailing(el) + px(getComputedStyle(el), "margin-bottom"),
            heading: HEADING.test(tag(el)), picture: PICTURE.test(tag(el))};
  }

  // The pieces a slide may be split between, in order: cells, outputs, paragraphs, list items,
  // table rows, lines of <pre>. Side by side (a row flexbox or table cells: a prompt beside its
  // cell) only the one that is not a prompt is split; elements holding text inline are not split.
  function collect(el, ctx, out) {
    const style = getComputedStyle(el);
    if (style.display === "none") return;
    if (tag(el) === "PRE" && lines(el, ctx, out)) return;
    const kids = Array.from(el.children).filter(shown);
    const text = Array.from(el.childNodes).some((n) => n.nodeType === 3 && n.data.trim());
    const inline = kids.some((k) => getComputedStyle(k).display === "inline");
    if (!text && kids.length === 1 && PICTURE.test(tag(kids[0]))) return collect(kids[0], ctx, out);
    if (ATOMIC.test(tag(el)) || !kids.length || text || inline || style.display.includes("grid")) {
      const one = leaf(el, ctx);
      if (one) out.push(one);
      return;
    }
    const row = (style.display.includes("flex") && style.flexDirection.startsWith("row")) ||
                kids.some((k) => getComputedStyle(k).display === "table-cell");
    if (row && kids.length > 1) {           // side by side: split the one beside its prompt, if one
      const main = kids.filter((k) => !/Prompt|Collapser/.test(k.className));
      if (main.length === 1) collect(main[0], ctx, out);
      else { const one = leaf(el, ctx); if (one) out.push(one); }
      return;
    }
    for (const k of kids) collect(k, ctx, out);
  }

  const origin = new WeakMap();    // an empty copy made by splitBefore -> the element it copies
  const extra = new WeakSet();     // what splitBefore added: a blank prompt, a table's header again

  // Move `node` and all that follows it in `section` into a new sub-slide right after it.
  function splitBefore(node, section) {
    const chain = [];
    for (let n = node; n !== section; n = n.parentNode) chain.push(n);
    const rest = section.cloneNode(false);
    rest.removeAttribute("id");
    origin.set(rest, section);
    let into = rest;
    for (let i = chain.length - 1; i >= 0; i--) {
      const n = chain[i];
      let from = n;
      if (i > 0) {
        const clone = n.cloneNode(false);
        clone.removeAttribute("id");
        origin.set(clone, n);
        if (clone.classList.contains("fragment")) {   // shown one step earlier, with its start
          clone.classList.remove("fragment", "visible", "current-fragment");
          clone.removeAttribute("data-fragment-index");
        }
        const child = chain[i - 1];
        if (tag(n) === "OL") {       // a numbered list goes on counting
          let before = 0;
          for (let c = child.previousElementSibling; c; c = c.previousElementSibling) {
            before += tag(c) === "LI";
          }
          clone.setAttribute("start", String((n.start || 1) + before));
        }
        if (tag(n) === "TABLE" && n.tHead && child !== n.tHead) {   // its header again
          const head = n.tHead.cloneNode(true);
          head.classList.add("fit-repeat");
          extra.add(head);
          clone.appendChild(head);
        }
        for (let c = n.firstElementChild; c && c !== child; c = c.nextElementSibling) {
          if (/Prompt|Collapser/.test(c.className)) {   // keep the cell's indent, not its prompt
            const blank = c.cloneNode(false);
            blank.removeAttribute("id");
            extra.add(blank);
            clone.appendChild(blank);
          }
        }
        into.appendChild(clone);
        from = n.nextSibling;
        while (from) { const next = from.nextSibling; into.appendChild(from); from = next; }
        into = clone;
      } else {
        while (from) { const next = from.nextSibling; into.appendChild(from); from = next; }
      }
    }
    section.after(rest);
    return rest;
  }

  // Undo splitBefore: `copy`'s content goes back to the end of `original`, the copies go away.
  function join(original, copy) {
    for (const e of Array.from(copy.children)) if (extra.has(e)) e.remove();
    const first = copy.firstChild;
    if (first && origin.get(first) === original.lastChild) join(original.lastChild, first);
    while (copy.firstChild) original.appendChild(copy.firstChild);
    copy.remove();
  }

  // Something a reader sees: text, a picture, or a box with a size (not a prompt, not hidden).
  function significant(n) {
    if (n.nodeType === 3) return Boolean(n.data.trim());
    if (n.nodeType !== 1 || !shown(n) || /Prompt|Collapser/.test(n.className)) return false;
    if (n.textContent.trim() || n.querySelector("img, svg, canvas, video, iframe")) return true;
    const r = n.getBoundingClientRect();
    return r.width > 0 && r.height > 0;
  }

  const fits = (section, width, height) => section.scrollHeight <= height && section.scrollWidth <= width;

  // One step: split `section` once (returns the new sub-slide), scale a picture in it (returns
  // true) or find nothing to do (returns false).
  function splitOnce(section, width, height) {
    const box = section.getBoundingClientRect();
    const scale = box.height / section.offsetHeight || 1;
    const sectionStyle = getComputedStyle(section);
    const ctx = {
      // what closes after an element if the slide ends with it: its ancestors' bottoms
      trailing(el) {
        let sum = px(sectionStyle, "padding-bottom");
        for (let a = el.parentElement; a && a !== section; a = a.parentElement) {
          const s = getComputedStyle(a);
          sum += px(s, "padding-bottom") + px(s, "border-bottom-width") + px(s, "margin-bottom");
        }
        return sum;
      },
    };
    const pieces = [];
    for (const k of Array.from(section.children).filter(shown)) collect(k, ctx, pieces);
    const bottomOf = (p) => (p.bottom - box.top) / scale + p.trailing;
    let k = pieces.findIndex((p) => bottomOf(p) > height + 0.5);
    if (k < 0 && section.scrollHeight > height) k = pieces.length - 1;   // margins we did not count
    if (k < 0) return false;                   // too wide, not too tall: nothing to split here
    const p = pieces[k];
    const room = height - (p.top - box.top) / scale - p.trailing;
    if (p.picture && (k === 0 || room >= height / 2)) {   // a picture too tall: scaled to fit
      const el = p.node, natural = (p.bottom - p.top) / scale;
      const fit = Math.floor(room - px(getComputedStyle(el), "margin-bottom")) - 1;
      if (fit <= 0 || fit >= natural) return false;
      el.style.maxHeight = fit + "px";
      el.style.height = tag(el) === "IMG" ? "auto" : fit + "px";
      el.style.width = "auto";
      el.style.maxWidth = "100%";
      return true;
    }
    if (k === 0) return false;                 // one piece taller than a slide, not a picture
    if (k > 1 && pieces[k - 1].heading) k -= 1;   // a heading goes with what follows it
    for (let j = k; j > 1 && pieces[j].pre && pieces[j].pre === pieces[k].pre; j--) {
      if ((pieces[j].top - box.top) / scale < 0.6 * height) break;
      if (pieces[j].blank) { k = j; break; }   // code: after a blank line, if one is near
    }
    const before = (n) => {
      for (let b = n.previousSibling; b; b = b.previousSibling) if (significant(b)) return true;
      return false;
    };
    // before the highest element the piece starts (no empty copy stays behind); before its
    // whole cell if the cell is short (a short output stays with its code)
    const breakAt = (j, whole) => {
      let node = pieces[j].node;
      const cell = whole && (node.nodeType === 1 ? node : node.parentElement).closest(".jp-Cell");
      if (cell && section.contains(cell) && cell.getBoundingClientRect().height / scale <= 0.4 * height) node = cell;
      while (node.parentNode !== section && !before(node)) node = node.parentNode;
      return before(node) ? node : null;
    };
    // the first piece must fit with all its margins: if it does not, an earlier break
    for (let j = k; j >= 1; j--) {
      const node = breakAt(j, true) || breakAt(j, false);
      if (!node) continue;
      const rest = splitBefore(node, section);
      if (j === 1 || fits(section, width, height)) return rest;
      join(section, rest);
    }
    return false;
  }

  // Split until every piece fits; a piece that cannot be split (one paragraph, one table row,
  // one line taller than a slide) is left as it is, and the test names it.
  function fitSection(section, width, height) {
    const todo = [section];
    for (let guard = 0; todo.length && guard < 1000; guard++) {
      const s = todo.pop();
      if (fits(s, width, height)) continue;
      const done = splitOnce(s, width, height);
      if (done === true) todo.push(s);
      else if (done) todo.push(done, s);       // the first piece again, then the rest
    }
  }

  function fitDeck(deck) {
    const width = deck.getConfig().width, height = deck.getConfig().height;
    const leaves = [];
    for (const h of deck.getHorizontalSlides()) {
      const v = Array.from(h.children).filter((c) => tag(c) === "SECTION");
      leaves.push(...(v.length ? v.map((s) => [h, s]) : [[h, h]]));
    }
    let added = 0;
    for (const [h, s] of leaves) {
      const saved = [h.style.display, s.style.display], next = s.nextElementSibling;
      h.style.display = s.style.display = "block";       // measured where it is shown
      fitSection(s, width, height);
      for (let n = s.nextElementSibling; n && n !== next; n = n.nextElementSibling) {
        n.style.display = "";                             // reveal.js shows and hides it
        added += 1;
      }
      h.style.display = saved[0];
      s.style.display = saved[1];
    }
    return added;
  }

  window.fitSlides = function (deck, address) {
    const added = fitDeck(deck);
    deck.sync();
    const m = /^#\/(\d+)(?:\/(\d+))?/.exec(address || "");
    if (m) deck.slide(Number(m[1]), Number(m[2] || 0));
    deck.layout();
    document.querySelector(".reveal").dataset.fitted = String(added);
    return added;
  };
})();
