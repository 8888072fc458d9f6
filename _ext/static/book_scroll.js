// A box that scrolls sideways says so. Chromium and Safari hide a scroll box's scrollbar until it
// is touched (always on a phone), so a table wider than its box looked cut off, often mid-word.
// Every sideways-scrolling box of the article holding a table wider than it gets the class
// "book-scrolls" (book_ui.css: a scrollbar that stays visible and a shadow at the edge that hides
// more), again after a resize, a box is opened, or once MathJax has set the formulas.
(function () {
  "use strict";
  const MARK = "book-scrolls";

  function mark() {
    const article = document.querySelector(".bd-article") || document.body;
    // boxes around tables only: a formula's glyphs overhang its box by a pixel or two, and a
    // formula too wide for a phone already scrolls inside its own box
    article.querySelectorAll("*").forEach((el) => {
      const ox = getComputedStyle(el).overflowX;
      const scrolls = (ox === "auto" || ox === "scroll") && el.scrollWidth > el.clientWidth + 1 &&
        el.querySelector("table") !== null;
      el.classList.toggle(MARK, scrolls);
    });
  }

  let pending = null;
  function later() {
    if (pending) { clearTimeout(pending); }
    pending = setTimeout(mark, 100);
  }

  document.addEventListener("DOMContentLoaded", mark);
  window.addEventListener("load", mark);
  window.addEventListener("resize", later);
  // a folded box (the re-run box, a details element) shows its tables only once opened
  document.addEventListener("click", later);
  document.addEventListener("toggle", later, true);
  if (window.MathJax && window.MathJax.startup && window.MathJax.startup.promise) {
    window.MathJax.startup.promise.then(later);
  }
})();
