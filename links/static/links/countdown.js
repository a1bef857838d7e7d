// Progressive enhancement for the landing page: a live countdown and the
// expiry in the visitor's own time zone. Without JavaScript the page shows
// the server's rendering (time left at load, expiry in UTC).
(function () {
  "use strict";
  function format(seconds) {
    var d = Math.floor(seconds / 86400), h = Math.floor(seconds % 86400 / 3600),
        m = Math.floor(seconds % 3600 / 60), s = seconds % 60;
    var parts = [];
    if (d) parts.push(d + " d");
    if (d || h) parts.push(h + " h");
    if (d || h || m) parts.push(m + " min");
    if (!d) parts.push(s + " s");
    return parts.join(" ");
  }
  var loaded = Date.now();
  document.querySelectorAll("time.local-time").forEach(function (el) {
    var when = new Date(el.getAttribute("datetime"));
    el.textContent = when.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "medium" });
  });
  var counters = document.querySelectorAll(".countdown");
  var ended = false;
  function end() {
    // The deadline passed while the page was open: say so, and take the
    // button away (the server refuses the download anyway).
    ended = true;
    document.querySelectorAll("[data-download]").forEach(function (el) { el.hidden = true; });
    document.querySelectorAll(".ended-notice").forEach(function (el) {
      el.textContent = el.dataset.endedText;
    });
  }
  function tick() {
    counters.forEach(function (el) {
      // The server's own count of what is left: the visitor's clock may be off.
      var left = Number(el.dataset.msLeft) - (Date.now() - loaded);
      el.textContent = left > 0 ? format(Math.ceil(left / 1000)) : (el.dataset.expiredText || "expired");
      if (left <= 0 && !ended) end();
    });
  }
  if (counters.length) { tick(); setInterval(tick, 250); }
})();
