// Progressive enhancement for a link whose file is being checked for
// viruses: ask the page again (as a browser would) every few seconds and,
// once it no longer says "being checked", show the page that came back
// (its Download button, or why the link ended), and hide the link that
// says to reload it (what a visitor without JavaScript does).
(function () {
  "use strict";
  var notice = document.querySelector("[data-being-checked]");
  if (!notice || !window.fetch || !window.DOMParser) return;
  var wait = (parseInt(notice.dataset.retryAfter, 10) || 5) * 1000;
  document.querySelectorAll("[data-scan-reload]").forEach(function (el) { el.hidden = true; });
  function look() {
    fetch(window.location.href, { headers: { Accept: "text/html" }, credentials: "same-origin", cache: "no-store" })
      .then(function (response) { return response.text(); })
      .then(function (html) {
        var page = new DOMParser().parseFromString(html, "text/html");
        if (page.querySelector("[data-being-checked]")) {
          setTimeout(look, wait);
          return;
        }
        var main = document.querySelector("main");
        var fresh = page.querySelector("main");
        if (main && fresh) {
          main.replaceWith(document.importNode(fresh, true));
          document.title = page.title;
        } else {
          window.location.reload();
        }
      })
      .catch(function () { setTimeout(look, wait); });
  }
  setTimeout(look, wait);
})();
