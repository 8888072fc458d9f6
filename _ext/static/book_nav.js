// The visible sidebar buttons open the chapter list and the page contents on every screen.
//
// pydata-sphinx-theme 0.17 binds its sidebar dialogs to the *first* .primary-toggle and
// .secondary-toggle in the page: buttons in its own header, which sphinx-book-theme hides. The
// buttons a reader sees (in the article header) get no listener and only show their tooltip. Each
// visible button forwards its click to the bound one; on a wide screen, where the chapter list is
// part of the layout, the hamburger hides or shows it instead of opening it as a dialog.
(function () {
  "use strict";
  const COLLAPSED = "book-primary-collapsed";

  // The chapter list is part of the layout (wide screen), not an off-screen drawer (phone).
  function inLayout(sidebar) {
    const style = getComputedStyle(sidebar);
    const box = sidebar.getBoundingClientRect();
    return style.visibility !== "hidden" && style.position !== "fixed" && box.right > 0 && box.width > 0;
  }

  function wire(selector, sidebarSelector) {
    const bound = document.querySelector(selector);
    if (!bound) { return; }
    document.querySelectorAll(selector).forEach((button) => {
      if (button === bound || button.dataset.bookNav) { return; }
      button.dataset.bookNav = "wired";
      button.addEventListener("click", (event) => {
        event.preventDefault();
        event.stopPropagation();
        const sidebar = sidebarSelector ? document.querySelector(sidebarSelector) : null;
        if (sidebar && document.body.classList.contains(COLLAPSED)) {
          document.body.classList.remove(COLLAPSED);
        } else if (sidebar && inLayout(sidebar)) {
          document.body.classList.add(COLLAPSED);
        } else {
          bound.click();
        }
      });
    });
  }

  function setup() {
    wire(".primary-toggle", ".bd-sidebar-primary");
    wire(".secondary-toggle", null);
  }

  if (document.readyState === "loading") {
    document.addEventListener("DOMContentLoaded", setup);
  } else {
    setup();
  }
})();
