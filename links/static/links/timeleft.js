// How a time left and a moment read, shared by the link page and the owner
// pages: window.microcloudTime.format(seconds), .showLocalTimes(root).
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
  // <time class="local-time" datetime="..."> in the reader's own time zone,
  // named; without JavaScript the server's UTC rendering stays.
  function showLocalTimes(root) {
    (root || document).querySelectorAll("time.local-time").forEach(function (el) {
      var when = new Date(el.getAttribute("datetime"));
      if (!isNaN(when.getTime())) {
        // timeStyle "long" names the zone: a time without one is a guess.
        el.textContent = when.toLocaleString(undefined, { dateStyle: "medium", timeStyle: "long" });
      }
    });
  }
  window.microcloudTime = { format: format, showLocalTimes: showLocalTimes };
})();
