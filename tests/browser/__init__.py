"""The rendered book as a reader meets it, checked in a real browser (headless Chromium).

``make test`` runs this folder's tests after ``tools/render_book.py`` has rendered the committed notebooks
into ``_build/test/_build/html`` (set ``LOWRANK_BOOK_HTML`` to check another build, for instance
``_build/html`` after ``make book``). The pages are served over HTTP on 127.0.0.1 and opened with
Playwright driving Debian's ``/usr/bin/chromium`` (``CHROMIUM`` overrides the path; Playwright never
downloads a browser here). For ``index.html`` and every page in ``_toc.yml`` it checks: no
JavaScript error in the console, no failed request and no request leaving 127.0.0.1, every image
loaded, every piece of math typeset by MathJax without errors and no raw ``$$`` left in the text,
every internal link pointing at an existing file and anchor. Chapter pages must also carry their
number, a lead paragraph under the title, the closing "What to take away", the download button for their
notebook, the generated re-run box and one box per sphinx-proof directive in their source; the
bibliography lists every entry of the .bib files; the execution report lists every chapter as
succeeded. A full-page PNG screenshot of each page goes to ``_build/screenshots/`` (mirroring the
page's path; ``LOWRANK_SCREENSHOTS`` overrides the folder), and one at phone width to
``_build/screenshots/phone/``.

At desktop (1280 px) and phone (390 px) width, every page is also checked as a reader sees it
(as a reader would): every image keeps its natural aspect ratio and sits in a numbered, captioned figure; no
raw ``$`` or TeX is left in the text; no stderr or error output block is shown; the page does not
scroll sideways (the elements that stick out are named) and no formula, image, table or code is
cut off by a box that hides its overflow; and chapter prose shows values, not the
names of the chapter's parameters. Each failure names the page, the width and the element (its
section, file name or text). The re-run box must list every scale with its hardware and time, and
link the source archive and "Running it yourself".

And as a reader who wants the answer on any screen: at 390 px the visible hamburger opens the
chapter list and the contents button the page contents (at 1280 px the hamburger hides and shows
the chapter list); every table cell is padded by at least 3 px and numbers are right-aligned; every
table in a chapter and on the landing page has a numbered caption; pasted values are not bold in
running text, and no paragraph of running text is set in bold; a chapter's lead is in the body
weight and about four lines at most on a phone; no raw MyST role or directive markup is left;
parameter cells are folded away; the landing page's first screen, at both widths, holds each
paper's answer to the title question whole, and none of its tables scrolls sideways; no figure text
is drawn smaller than ``lowrank.book.figures.MIN_TEXT_PX`` (9 CSS px) at either width, computed from
the size of each figure's smallest text and the width the browser drew the chosen variant at (a
chapter or landing-page figure whose text size is unknown fails too: its notebook predates the
figure formatter); and every figure's plotting area takes at least
``lowrank.book.figures.MIN_PLOT_FRAC`` of its width and none of its texts is drawn over another, in
the variant shown (measured when the figure was drawn; required on the landing page).

Without Chromium (``tools/ensure_chromium.sh`` installs it when it can) or Playwright the browser
tests are skipped with the reason, except under CI (``CI=true``), where they fail.
"""
