// The owner's upload requests page: each open request's state (Open, Full,
// or how it ended) and the places taken, asked of the server every few
// seconds while the page is visible, so an upload through a request shows
// without a reload. The words come formatted from the server, as the page's
// own are; a hidden tab asks nothing.
(function () {
  "use strict";
  var section = document.getElementById("requests");
  if (!section || !section.dataset.placesUrl) return;
  var POLL_MS = Number(section.dataset.pollMs) || 3000;
  var timer = null;

  function openItems() {
    return Array.prototype.slice.call(section.querySelectorAll(".request-item[data-open]"));
  }

  function field(item, name) {
    return item.querySelector('[data-field="' + name + '"]');
  }

  function show(item, row) {
    field(item, "files").textContent = row.files;
    field(item, "bytes").textContent = row.bytes;
    var state = field(item, "state");
    if (row.open) {
      state.textContent = row.state;
      return;
    }
    // Ended since the page was drawn: it says when, as the server's rows do.
    var time = document.createElement("time");
    time.className = "local-time";
    time.dateTime = row.ended_at;
    time.textContent = row.ended_at_utc;
    state.replaceChildren(row.state + " ", time);
    if (window.microcloudTime) window.microcloudTime.showLocalTimes(state);
    delete item.dataset.open; // nothing changes for it any more
  }

  function poll() {
    timer = null;
    var items = openItems();
    if (!items.length || document.visibilityState !== "visible") return;
    var query = items.map(function (item) { return "id=" + encodeURIComponent(item.dataset.requestId); }).join("&");
    fetch(section.dataset.placesUrl + "?" + query, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : { requests: [] }; })
      .then(function (body) {
        body.requests.forEach(function (row) {
          var item = section.querySelector('.request-item[data-request-id="' + row.id + '"]');
          if (item) show(item, row);
        });
      })
      .catch(function () { /* the next poll tries again */ })
      .then(schedule);
  }

  function schedule() {
    if (timer === null && document.visibilityState === "visible") timer = setTimeout(poll, POLL_MS);
  }

  document.addEventListener("visibilitychange", function () {
    if (document.visibilityState === "visible") {
      if (timer !== null) clearTimeout(timer);
      poll();
    }
  });
  schedule();
})();
