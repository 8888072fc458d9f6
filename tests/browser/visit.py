"""What a reader's browser saw on one page: the probes run in the page and how a page is loaded."""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from urllib.parse import urljoin, urlsplit

from .book import HTML, VIEWPORTS, Page, screenshot_path


@dataclass
class Visit:
    """What a reader's browser saw on one page."""
    url: str
    final_path: str
    errors: list[str] = field(default_factory=list)     # console errors, uncaught exceptions
    failed: list[str] = field(default_factory=list)     # failed or 4xx/5xx requests
    external: list[str] = field(default_factory=list)   # requests to another host (blocked)
    dom: dict = field(default_factory=dict)


DOM_PROBE = """async () => {
  const mj = window.MathJax;
  const mathjaxLoaded = !!(mj && mj.startup && mj.startup.promise);
  if (mathjaxLoaded) { await mj.startup.promise; }
  const mathErrors = [];
  if (mathjaxLoaded && mj.startup.document) {
    for (const item of mj.startup.document.math) {
      item.root.walkTree((node) => {
        const undefinedMacro = node.isKind('mtext') && node.attributes.get('mathcolor') === 'red';
        if (node.isKind('merror') || undefinedMacro) { mathErrors.push(item.math); }
      });
    }
  }
  const article = document.querySelector('article') || document.body;
  const rawDollars = [];
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  const skip = 'pre, code, script, style, textarea, mjx-container, .highlight';
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    if (n.nodeValue.includes('$$') && !n.parentElement.closest(skip)) { rawDollars.push(n.nodeValue.trim().slice(0, 120)); }
  }
  const text = (el) => { const c = el.cloneNode(true); c.querySelectorAll('.headerlink, .section-number').forEach((x) => x.remove()); return c.textContent.trim(); };
  const h1 = article.querySelector('h1');
  let lead = h1 ? h1.nextElementSibling : null;
  const rerun = article.querySelector('.rerun-chapter');
  return {
    mathjaxLoaded,
    mathErrors,
    rawDollars,
    math: Array.from(article.querySelectorAll('.math'), (el) => ({ text: el.textContent.slice(0, 80), typeset: !!el.querySelector('mjx-container') })),
    mjxCount: article.querySelectorAll('mjx-container').length,
    images: Array.from(document.images, (img) => ({ src: img.currentSrc || img.src, ok: img.complete && img.naturalWidth > 0 })),
    links: Array.from(document.querySelectorAll('a[href]'), (a) => ({ raw: a.getAttribute('href'), abs: a.href })),
    ids: Array.from(document.querySelectorAll('[id], a[name]'), (el) => el.id || el.getAttribute('name')),
    h1: h1 ? text(h1) : null,
    h1Number: h1 && h1.querySelector('.section-number') ? h1.querySelector('.section-number').textContent.trim() : null,
    leadHtml: lead && lead.tagName === 'P' ? lead.innerHTML.trim() : null,
    h2: Array.from(article.querySelectorAll('section > h2'), text),
    proofs: article.querySelectorAll('div.proof.admonition').length,
    rerunText: rerun ? rerun.textContent : null,
    rerunRows: rerun ? rerun.querySelectorAll('table.rerun-chapter-parameters tbody tr').length : 0,
    rerunScales: rerun ? Array.from(rerun.querySelectorAll('table.rerun-chapter-scales tbody tr'), (tr) => Array.from(tr.cells, (td) => td.textContent.trim())) : [],
    rerunLinks: rerun ? Array.from(rerun.querySelectorAll('a[href]'), (a) => a.getAttribute('href')) : [],
    downloads: Array.from(document.querySelectorAll('.dropdown-download-buttons a, a.btn[href$=".ipynb"], a[href$=".ipynb"]'), (a) => a.getAttribute('href')),
    citations: article.querySelectorAll('.citation').length,
    partCaptions: Array.from(document.querySelectorAll('.bd-sidebar-primary p.caption'), (p) => p.textContent.trim()),
    tableRows: Array.from(article.querySelectorAll('table tbody tr'), (tr) => Array.from(tr.cells, (td) => td.textContent.trim())),
  };
}"""


# Before the screenshot: fonts loaded, layout settled, nothing scrolled (a theme script that scrolls
# the navigation to the current page can leave a container scrolled sideways).
SETTLE = """async () => {
  await document.fonts.ready;
  await new Promise((done) => requestAnimationFrame(() => requestAnimationFrame(done)));
  window.scrollTo(0, 0);
  for (const el of document.querySelectorAll('*')) { if (el.scrollLeft) { el.scrollLeft = 0; } }
  return document.documentElement.scrollWidth - document.documentElement.clientWidth;
}"""


# After SETTLE: what the reader sees, element by element, for the layout and prose checks. Every
# finding names where it is (the enclosing section's heading) so that a failure points at one element.
LAYOUT_PROBE = r"""() => {
  const article = document.querySelector('article') || document.body;
  const vw = document.documentElement.clientWidth;
  const clean = (t) => (t || '').replace(/\s+/g, ' ').trim();
  const where = (el) => {
    const sec = el.closest('section');
    const h = sec ? sec.querySelector('h1, h2, h3, h4, h5, h6') : null;
    const c = h ? h.cloneNode(true) : null;
    if (c) { c.querySelectorAll('.headerlink').forEach((x) => x.remove()); }
    const adm = el.closest('.admonition');
    const box = adm && adm.querySelector('.admonition-title') ? ` in box "${clean(adm.querySelector('.admonition-title').textContent).slice(0, 60)}"` : '';
    return (c ? `section "${clean(c.textContent)}"` : 'page top') + box;
  };
  const describe = (el) => el.tagName.toLowerCase() + (el.id ? '#' + el.id : '')
    + (typeof el.className === 'string' && el.className.trim() ? '.' + el.className.trim().split(/\s+/).slice(0, 3).join('.') : '');
  const skipText = 'pre, code, kbd, samp, script, style, textarea, mjx-container, .highlight, .MathJax, mjx-assistive-mml';

  // Images: natural against rendered aspect ratio; numbered figure around it.
  const images = Array.from(article.querySelectorAll('img'), (img) => {
    const r = img.getBoundingClientRect();
    const fig = img.closest('figure');
    const num = fig ? fig.querySelector('figcaption .caption-number') : null;
    return {
      src: (img.getAttribute('src') || '').split('/').pop(), alt: img.getAttribute('alt') || '',
      naturalW: img.naturalWidth, naturalH: img.naturalHeight, w: r.width, h: r.height,
      visible: r.width > 0 && r.height > 0 && !img.closest('.rerun-chapter'),
      numbered: !!num, number: num ? clean(num.textContent) : null,
      caption: fig && fig.querySelector('figcaption') ? clean(fig.querySelector('figcaption').textContent).slice(0, 80) : null,
      where: where(img),
    };
  });

  // Raw TeX or dollar signs left in the text a reader sees.
  const rawTex = [];
  const tex = /\$|\\[A-Za-z]{2,}|\\[{}()\[\]]|\^\{|_\{/;
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const parent = n.parentElement;
    if (!parent || parent.closest(skipText) || !tex.test(n.nodeValue)) { continue; }
    const m = n.nodeValue.match(tex);
    const at = Math.max(0, m.index - 40);
    rawTex.push({ text: clean(n.nodeValue.slice(at, m.index + 60)), where: where(parent), element: describe(parent) });
  }

  // Output blocks from stderr (warnings, progress bars) and tracebacks.
  const stderr = Array.from(article.querySelectorAll('.stderr, .output.error, .output.traceback'),
    (el) => ({ text: clean(el.textContent).slice(0, 120), where: where(el), element: describe(el) }));

  // What sticks out of the window: outermost elements whose right edge is past it, not clipped by a
  // scrolling ancestor, not fixed (drawers), not hidden.
  const sticksOut = [];
  const clipped = (el) => {
    for (let a = el.parentElement; a && a !== document.body; a = a.parentElement) {
      const cs = getComputedStyle(a);
      if (['auto', 'scroll', 'hidden', 'clip'].includes(cs.overflowX)) { return true; }
      if (cs.position === 'fixed') { return true; }
    }
    return false;
  };
  const overflowing = new Set();
  for (const el of document.body.querySelectorAll('*')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0 || r.right <= vw + 1) { continue; }
    const cs = getComputedStyle(el);
    if (cs.visibility === 'hidden' || cs.display === 'none' || cs.position === 'fixed' || clipped(el)) { continue; }
    overflowing.add(el);
  }
  for (const el of overflowing) {
    if (overflowing.has(el.parentElement)) { continue; }
    sticksOut.push({ element: describe(el), by: Math.round(el.getBoundingClientRect().right - vw),
                     text: clean(el.textContent).slice(0, 80), where: where(el) });
  }

  // What is cut off: maths, images, tables and code wider than an ancestor that hides its overflow
  // (a box with overflow: hidden clips a long formula instead of letting the page scroll).
  const cutOff = [];
  for (const el of article.querySelectorAll('mjx-container, img, table, pre, code')) {
    const r = el.getBoundingClientRect();
    if (r.width === 0) { continue; }
    for (let a = el.parentElement; a && a !== article.parentElement; a = a.parentElement) {
      const ox = getComputedStyle(a).overflowX;
      if (ox === 'auto' || ox === 'scroll') { break; }
      if (ox === 'hidden' || ox === 'clip') {
        const ar = a.getBoundingClientRect();
        const by = Math.round(Math.max(r.right - ar.right, ar.left - r.left));
        if (by > 1) {
          cutOff.push({ element: describe(el), box: describe(a), by, where: where(el),
                        text: clean(el.textContent || el.getAttribute('src') || '').slice(0, 60) });
        }
        break;
      }
    }
  }

  // Tables whose content is cut off without a visible sign that it scrolls: wider than the first
  // box around them that does not let it spill (a box that hides it, or one that scrolls without
  // the book's visible scrollbar, class book-scrolls from book_scroll.js), or with a cell that
  // clips its own text.
  const cutTables = [];
  for (const t of article.querySelectorAll('table')) {
    const r = t.getBoundingClientRect();
    if (r.width === 0) { continue; }
    let box = t.parentElement;
    while (box && box !== article.parentElement && getComputedStyle(box).overflowX === 'visible') { box = box.parentElement; }
    if (box && box !== article.parentElement) {
      const br = box.getBoundingClientRect();
      const by = Math.round(Math.max(r.right - br.right, br.left - r.left));
      const ox = getComputedStyle(box).overflowX;
      const shown = (ox === 'auto' || ox === 'scroll') && box.classList.contains('book-scrolls');
      if (by > 1 && !shown) {
        cutTables.push({ element: describe(t), box: describe(box), by, where: where(t),
                         text: clean((t.querySelector('tr') || t).textContent).slice(0, 60) });
      }
    }
    for (const c of t.querySelectorAll('td, th')) {
      if (c.getBoundingClientRect().width === 0 || getComputedStyle(c).overflowX === 'visible') { continue; }
      if (c.scrollWidth > c.clientWidth + 1) {
        cutTables.push({ element: describe(c), box: 'its own cell', by: c.scrollWidth - c.clientWidth, where: where(c),
                         text: clean(c.textContent).slice(0, 60) });
      }
    }
  }

  // Prose: the visible text of paragraphs, list items, captions and headings, without code, maths,
  // tables, cell outputs and the re-run box (where parameter names belong).
  const prose = [];
  for (const el of article.querySelectorAll('p, li, figcaption, dt, dd, h1, h2, h3, h4, caption')) {
    if (el.closest('.rerun-chapter, table, .cell_output, .cell_input, pre, .highlight, nav, .toctree-wrapper')) { continue; }
    if (el.querySelector('p, li')) { continue; }  // the innermost block carries the text
    const c = el.cloneNode(true);
    const codes = Array.from(c.querySelectorAll('code'), (x) => clean(x.textContent));
    c.querySelectorAll('code, kbd, samp, pre, mjx-container, script, style, .headerlink').forEach((x) => x.remove());
    const text = clean(c.textContent);
    if (text || codes.length) { prose.push({ text, codes, where: where(el), tag: el.tagName.toLowerCase() }); }
  }
  return { viewportWidth: vw, images, rawTex, stderr, sticksOut, cutOff, cutTables, prose };
}"""


# Opens every folded box (a dropdown admonition, a details element), as a reader clicking it.
OPEN_FOLDED = r"""async () => {
  for (const d of document.querySelectorAll('details:not([open])')) { d.open = true; }
  for (const box of document.querySelectorAll('.dropdown')) {
    const body = Array.from(box.children).find((c) => !c.classList.contains('admonition-title'));
    if (body && body.getBoundingClientRect().height === 0) {
      (box.querySelector('.toggle-button') || box.querySelector('.admonition-title')).click();
    }
  }
  window.dispatchEvent(new Event('resize'));
  await new Promise((resolve) => setTimeout(resolve, 600));
}"""


# After SETTLE: tables, pasted values, leftover markup and the landing page's first screen.
READER_PROBE = r"""() => {
  const after = (el) => { const out = []; for (let e = el.nextElementSibling; e && out.length < 3; e = e.nextElementSibling) { out.push(e); } return out; };
  const article = document.querySelector('article') || document.body;
  const clean = (t) => (t || '').replace(/\s+/g, ' ').trim();
  const where = (el) => {
    const sec = el.closest('section');
    const h = sec ? sec.querySelector('h1, h2, h3, h4') : null;
    return h ? clean(h.textContent).replace(/#$/, '') : 'page top';
  };
  const numeric = /^[-−+]?(\d[\d,]*(\.\d+)?|\.\d+)( × 10[⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)?%?(\s*±\s*[\d.]+( × 10[⁻⁺]?[⁰¹²³⁴⁵⁶⁷⁸⁹]+)?)?$/;
  const px = (v) => parseFloat(v) || 0;
  const tables = Array.from(article.querySelectorAll('table'))
    .filter((t) => !t.closest('.rerun-chapter') && t.getBoundingClientRect().width > 0)
    .map((t) => {
      const box = t.closest('.book-table');
      const own = t.querySelector('caption .caption-number');
      const outer = box ? box.querySelector('.book-table-caption .caption-number') : null;
      const cells = Array.from(t.querySelectorAll('td, th'));
      const tight = cells.filter((c) => { const cs = getComputedStyle(c); return Math.min(px(cs.paddingLeft), px(cs.paddingRight)) < 3; });
      const leftNumbers = Array.from(t.querySelectorAll('tbody td')).filter((c) => {
        const text = clean(c.textContent);
        const align = getComputedStyle(c).textAlign;
        return numeric.test(text) && !['right', 'end'].includes(align);
      });
      return {
        where: where(t), first: clean((t.querySelector('tr') || t).textContent).slice(0, 60),
        number: own ? clean(own.textContent) : (outer ? clean(outer.textContent) : null),
        tight: tight.length, tightExample: tight.length ? clean(tight[0].textContent).slice(0, 30) : null,
        leftNumbers: leftNumbers.length, leftExample: leftNumbers.length ? clean(leftNumbers[0].textContent) : null,
      };
    });
  const boldPasted = Array.from(article.querySelectorAll('.pasted-text'))
    .filter((el) => !el.closest('strong, b, h1, h2, h3, h4, th, .caption-number, .rerun-chapter')
                    && parseInt(getComputedStyle(el).fontWeight, 10) >= 600)
    .map((el) => ({ text: clean(el.textContent).slice(0, 60), where: where(el) }));
  const rawMarkup = [];
  const markup = /\{(glue|glue:\w+|numref|ref|doc|cite|cite:\w+|prf:\w+|eq|math|term|download|table-caption)\}`?/;
  const walker = document.createTreeWalker(article, NodeFilter.SHOW_TEXT);
  for (let n = walker.nextNode(); n; n = walker.nextNode()) {
    const parent = n.parentElement;
    if (!parent || parent.closest('pre, .highlight, .cell_input, script, style, .rerun-chapter')) { continue; }
    const m = n.nodeValue.match(markup);
    if (m) { rawMarkup.push({ text: clean(n.nodeValue.slice(Math.max(0, m.index - 30), m.index + 50)), where: where(parent) }); }
  }
  const shownSetup = Array.from(article.querySelectorAll('div.cell.tag_parameters'))
    .filter((cell) => { const input = cell.querySelector('.cell_input'); return input && !input.closest('details'); })
    .map((cell) => clean(cell.textContent).slice(0, 60));
  const found = article.querySelector('.book-found');
  const onFirstScreen = (el) => !!el && el.getBoundingClientRect().top < window.innerHeight && el.getBoundingClientRect().height > 0;
  const wholeOnFirstScreen = (el) => { const r = el.getBoundingClientRect(); return r.height > 0 && r.top >= 0 && r.bottom <= window.innerHeight; };
  // The share of an element's visible text set in bold (600 or heavier), text node by text node.
  const boldShare = (el) => {
    let all = 0, bold = 0;
    const w = document.createTreeWalker(el, NodeFilter.SHOW_TEXT);
    for (let n = w.nextNode(); n; n = w.nextNode()) {
      const k = n.nodeValue.replace(/\s+/g, '').length;
      if (!k || !n.parentElement || n.parentElement.closest('mjx-assistive-mml')) { continue; }
      all += k;
      if (parseInt(getComputedStyle(n.parentElement).fontWeight, 10) >= 600) { bold += k; }
    }
    return all ? bold / all : 0;
  };
  const boldParagraphs = Array.from(article.querySelectorAll('p'))
    .filter((el) => !el.closest('table, figcaption, .caption, .admonition-title, nav, .rerun-chapter, .book-table-caption, dt, h1, h2, h3, h4, .toctree-wrapper'))
    .filter((el) => clean(el.textContent).length >= 40 && el.getBoundingClientRect().height > 0 && boldShare(el) > 0.5)
    .map((el) => ({ text: clean(el.textContent).slice(0, 80), where: where(el) }));
  const h1 = article.querySelector('h1');
  const leadEl = h1 && h1.nextElementSibling && h1.nextElementSibling.tagName === 'P' ? h1.nextElementSibling : null;
  const lead = leadEl ? {
    text: clean(leadEl.textContent).slice(0, 80), bold: boldShare(leadEl),
    lines: leadEl.getBoundingClientRect().height / (parseFloat(getComputedStyle(leadEl).lineHeight) || 1),
  } : null;
  // Tables wider than the box they scroll in: a reader has to swipe sideways to see every column.
  const scrolling = Array.from(article.querySelectorAll('table'))
    .filter((t) => t.getBoundingClientRect().width > 0 && !t.closest('.rerun-chapter'))
    .map((t) => {
      let box = t.parentElement;
      while (box && box !== article && !['auto', 'scroll'].includes(getComputedStyle(box).overflowX)) { box = box.parentElement; }
      const width = box && box !== article ? box.clientWidth : article.clientWidth;
      return { where: where(t), first: clean((t.querySelector('tr') || t).textContent).slice(0, 60),
               by: Math.round(t.getBoundingClientRect().width - width) };
    })
    .filter((t) => t.by > 1);
  return {
    tables, boldPasted, rawMarkup, shownSetup, boldParagraphs, lead, scrolling,
    found: found ? {
      text: clean(found.textContent).slice(0, 400),
      words: clean(found.textContent).split(' ').filter((w) => /[A-Za-z0-9]/.test(w)).length,
      height: found.getBoundingClientRect().height,
      // the counts and the chart follow the box, which holds the answer alone
      countsTable: after(found).some((e) => e.matches('table') || !!e.querySelector('table')),
      chart: after(found).some((e) => !!e.querySelector('img')),
      chartLoaded: after(found).some((e) => !!e.querySelector('img') && e.querySelector('img').naturalWidth > 0),
      answers: Array.from(found.querySelectorAll('.book-answer-lede'), (el) => ({
        text: clean(el.closest('p').textContent).slice(0, 120), onFirstScreen: wholeOnFirstScreen(el) })),
    } : null,
  };
}"""


# After SETTLE: each figure's smallest text as drawn. A chapter figure sits in a
# <picture> (_ext/book_figures.py) that carries each variant's 1x width and smallest text in 1x
# pixels (lowrank.book.figures); the variant the browser chose and the width it drew it at give the
# text size on screen.
FIGURE_PROBE = r"""() => {
  const article = document.querySelector('article') || document.body;
  const clean = (t) => (t || '').replace(/\s+/g, ' ').trim();
  return Array.from(article.querySelectorAll('figure img'))
    .filter((img) => img.getBoundingClientRect().width > 0 && !img.closest('.rerun-chapter'))
    .map((img) => {
      const pic = img.closest('picture[data-text-px]');
      const cap = img.closest('figure').querySelector('figcaption .caption-number');
      const out = { src: (img.getAttribute('src') || '').split('/').pop(), figure: cap ? clean(cap.textContent) : null,
                    shownWidth: img.getBoundingClientRect().width, known: !!pic };
      if (pic) {
        const narrow = !!pic.dataset.narrow && (img.currentSrc || '').endsWith('/' + pic.dataset.narrow);
        out.variant = narrow ? 'narrow' : 'wide';
        out.width1x = parseFloat(narrow ? pic.dataset.narrowWidth : pic.dataset.width);
        out.textPx = parseFloat(narrow ? pic.dataset.narrowTextPx : pic.dataset.textPx);
        const frac = narrow ? pic.dataset.narrowPlotFrac : pic.dataset.plotFrac;
        const overlaps = narrow ? pic.dataset.narrowOverlaps : pic.dataset.overlaps;
        out.plotFrac = frac === undefined ? null : parseFloat(frac);
        out.overlaps = overlaps === undefined ? null : JSON.parse(overlaps);
      }
      return out;
    });
}"""


def load(browser, site: str, page: Page, width: str = "desktop") -> Visit:
    """Load one page at one width, wait for MathJax, probe it and screenshot it (full page).

    Requests to any host but the book's server are blocked and recorded in ``Visit.external``.
    """
    url = urljoin(site, page.path)
    result = Visit(url=url, final_path=page.path)
    context = browser.new_context(viewport=VIEWPORTS[width], device_scale_factor=1)
    host = urlsplit(site).netloc

    def route(r):
        if urlsplit(r.request.url).netloc == host or r.request.url.startswith(("data:", "blob:")):
            r.continue_()
        else:
            result.external.append(r.request.url)
            r.abort()

    context.route("**/*", route)
    tab = context.new_page()
    tab.set_default_timeout(30_000)
    tab.on("console", lambda m: result.errors.append(f"console.{m.type}: {m.text}") if m.type == "error" else None)
    tab.on("pageerror", lambda e: result.errors.append(f"uncaught exception: {e}"))
    # A request the browser cancels itself (net::ERR_ABORTED: a hidden variant of a figure still
    # in flight when the tab closes) is no missing resource; a missing one answers HTTP 404 below,
    # and an image that did not load fails the figure checks.
    tab.on("requestfailed", lambda r: result.failed.append(f"{r.url}: {r.failure}")
           if urlsplit(r.url).netloc == host and r.failure != "net::ERR_ABORTED" else None)
    tab.on("response", lambda r: result.failed.append(f"{r.url}: HTTP {r.status}") if r.status >= 400 else None)
    try:
        tab.goto(url, wait_until="load")
        refresh = re.search(r'http-equiv="Refresh" content="0; url=([^"]+)"', (HTML / page.path).read_text(encoding="utf8"))
        if refresh:  # index.html forwards to the first page
            tab.wait_for_url(urljoin(url, refresh.group(1)))
            tab.wait_for_load_state("load")
        result.final_path = urlsplit(tab.url).path.lstrip("/")
        result.dom = tab.evaluate(DOM_PROBE)
        result.dom["overflowX"] = tab.evaluate(SETTLE)
        result.dom["layout"] = tab.evaluate(LAYOUT_PROBE)
        result.dom["reader"] = tab.evaluate(READER_PROBE)
        result.dom["figures"] = tab.evaluate(FIGURE_PROBE)
        shot = screenshot_path(page, width)
        shot.parent.mkdir(parents=True, exist_ok=True)
        tab.screenshot(path=str(shot), full_page=True, timeout=180_000)  # long pages on a loaded machine
        # the tables of folded boxes (the re-run box) are measured once the boxes are open
        tab.evaluate(OPEN_FOLDED)
        result.dom["opened"] = tab.evaluate(LAYOUT_PROBE)
    finally:
        context.close()
    return result
