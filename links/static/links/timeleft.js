// How a time left and a moment read, shared by the link page and the owner
// pages: window.microcloudTime.format(seconds), .showLocalTimes(root), both
// in the page's language (<html lang>, which the server set), through Intl.
(function () {
  "use strict";
  // The page's language; the browser's own variant of it (en-GB, fr-CA) when
  // it speaks the same one, so dates read the way the reader is used to.
  var pageLang = document.documentElement.lang || "en";
  var own = (navigator.languages && navigator.languages[0]) || navigator.language || "";
  var locale = own.split("-")[0].toLowerCase() === pageLang.split("-")[0].toLowerCase() ? own : pageLang;

  var units = {};
  function unit(name, value) {
    // "3 hr" / "3 h": the unit's short name in the page's language.
    if (!units[name]) {
      try {
        units[name] = new Intl.NumberFormat(locale, { style: "unit", unit: name, unitDisplay: "short" });
      } catch (e) {
        units[name] = { format: function (n) { return n + " " + name.charAt(0); } };
      }
    }
    return units[name].format(value);
  }
  function format(seconds) {
    var d = Math.floor(seconds / 86400), h = Math.floor(seconds % 86400 / 3600),
        m = Math.floor(seconds % 3600 / 60), s = seconds % 60;
    var parts = [];
    if (d) parts.push(unit("day", d));
    if (d || h) parts.push(unit("hour", h));
    if (d || h || m) parts.push(unit("minute", m));
    if (!d) parts.push(unit("second", s));
    return parts.join(" ");
  }
  // <time class="local-time" datetime="..."> in the reader's own time zone,
  // named; without JavaScript the server's UTC rendering stays.
  function showLocalTimes(root) {
    (root || document).querySelectorAll("time.local-time").forEach(function (el) {
      var when = new Date(el.getAttribute("datetime"));
      if (!isNaN(when.getTime())) {
        // timeStyle "long" names the zone: a time without one is a guess.
        el.textContent = when.toLocaleString(locale, { dateStyle: "medium", timeStyle: "long" });
      }
    });
  }
  window.microcloudTime = { format: format, showLocalTimes: showLocalTimes };
})();
