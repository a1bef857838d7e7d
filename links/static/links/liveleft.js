// Progressive enhancement for a limited link's page: after a download
// starts, ask the server again (the page itself, as a browser would) and
// show the downloads left, or that the link has ended, without a reload.
// Without JavaScript the count is the one the page was rendered with.
(function () {
  "use strict";
  var left = document.querySelector("[data-downloads-left]");
  if (!left || !window.fetch || !window.DOMParser) return;
  var timers = [];
  function ended(page) {
    // The page that came back is the ended page: say what it says, in the
    // live region, and take the button away.
    var heading = page.querySelector("h1");
    document.querySelectorAll("[data-download]").forEach(function (el) { el.hidden = true; });
    document.querySelectorAll(".ended-notice").forEach(function (el) {
      el.textContent = heading ? heading.textContent : el.dataset.endedText;
    });
    timers.forEach(clearTimeout);
  }
  function refresh() {
    fetch(window.location.href, { headers: { Accept: "text/html" }, credentials: "same-origin", cache: "no-store" })
      .then(function (response) {
        return response.text().then(function (html) {
          var page = new DOMParser().parseFromString(html, "text/html");
          var now = page.querySelector("[data-downloads-left]");
          if (now) {
            if (now.textContent !== left.textContent) left.textContent = now.textContent;
          } else if (response.status === 410 || response.status === 404) {
            ended(page);
          }
        });
      })
      .catch(function () { /* offline for a moment: the next look may work */ });
  }
  document.querySelectorAll("[data-download]").forEach(function (button) {
    button.addEventListener("click", function () {
      timers.forEach(clearTimeout);
      // Soon after the response starts (it reserves its bytes then), and a
      // few times later for a slow start; not a steady poll.
      timers = [1000, 3000, 8000, 20000].map(function (ms) { return setTimeout(refresh, ms); });
    });
  });
  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible") refresh();
  });
})();
