// Progressive enhancement for the landing page: a live countdown and the
// expiry in the visitor's own time zone (timeleft.js, loaded first). Without
// JavaScript the page shows the server's rendering (time left at load, UTC).
(function () {
  "use strict";
  var time = window.microcloudTime;
  var loaded = Date.now();
  time.showLocalTimes(document);
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
      el.textContent = left > 0 ? time.format(Math.ceil(left / 1000)) : (el.dataset.expiredText || "expired");
      if (left <= 0 && !ended) end();
    });
  }
  if (counters.length) { tick(); setInterval(tick, 250); }
})();
