// The live dashboard: each share's time left counts down and turns to
// "expired" on time without a reload, and its status and downloads follow
// the server (GET /shares/live/?ids=..., every few seconds while the page is
// visible). Rows are [data-share-id] elements holding [data-field] spans.
// On the first page of the Active view (data-newest-id), the answer also
// carries the rows of links made since (the API, another tab): they go on
// top, and the page keeps its size.
(function () {
  "use strict";
  var POLL_MS = 5000;
  var time = window.microcloudTime;
  time.showLocalTimes(document);
  var rows = Array.prototype.slice.call(document.querySelectorAll("[data-share-id]"));
  var source = document.querySelector("[data-live-url]");
  var takesNew = !!(source && source.dataset.newestId);
  var newest = takesNew ? Number(source.dataset.newestId) : 0;
  if (!rows.length && !takesNew) return;

  function field(row, name) { return row.querySelector('[data-field="' + name + '"]'); }
  function setText(row, name, text) {
    var el = field(row, name);
    if (el && el.textContent !== text) el.textContent = text;
  }
  function deadlineIn(msLeft) {
    // Counted from the server's figure, not the visitor's clock, which may be off.
    return msLeft === "" || msLeft === null ? null : Date.now() + Number(msLeft);
  }
  function adopt(row) {
    var counter = field(row, "time_left");
    row.deadline = counter ? deadlineIn(counter.dataset.msLeft) : null;
    row.ended = row.deadline === null;
  }
  rows.forEach(adopt);

  function addNew(made) {
    var table = source.querySelector("table.shares-table");
    if (!table) return;
    var body = table.tBodies[0];
    // Oldest first, each put on top: the newest ends first, as the server orders.
    made.slice().reverse().forEach(function (item) {
      newest = Math.max(newest, item.id);
      if (body.querySelector('[data-share-id="' + item.id + '"]')) return;
      var holder = document.createElement("template");
      holder.innerHTML = item.html.trim();
      var row = holder.content.firstElementChild;
      body.insertBefore(row, body.firstChild);
      adopt(row);
      rows.unshift(row);
      time.showLocalTimes(row);
      if (window.microcloudCopy) window.microcloudCopy.wire(row);
    });
    // The rows pushed past the page's size are on the next page now.
    var size = Number(source.dataset.pageSize) || rows.length;
    while (rows.length > size) rows.pop().remove();
    if (rows.length) {
      table.hidden = false;
      var empty = source.querySelector("[data-empty]");
      if (empty) empty.remove();
    }
  }

  function end(row, status) {
    row.ended = true;
    row.deadline = null;
    row.querySelectorAll("[data-live-only]").forEach(function (el) { el.hidden = true; });
    var counter = field(row, "time_left");
    if (counter) counter.textContent = status === "expired" ? counter.dataset.expiredText : counter.dataset.endedText;
  }

  function tick() {
    var now = Date.now();
    rows.forEach(function (row) {
      if (row.ended) return;
      var left = row.deadline - now;
      if (left > 0) {
        setText(row, "time_left", time.format(Math.ceil(left / 1000)));
        return;
      }
      var status = field(row, "status_label");
      if (status) status.textContent = status.dataset.expiredLabel;
      end(row, "expired");
      poll(1000); // then the server's own words: when and how it ended
    });
  }

  function apply(row, state) {
    setText(row, "downloads", state.downloads);
    setText(row, "downloads_left", state.downloads_left);
    setText(row, "in_full", state.in_full);
    if (state.live) {
      // An ended share never comes back; a live one may have a new deadline.
      if (!row.ended) row.deadline = deadlineIn(state.ms_left);
      return;
    }
    setText(row, "status_label", state.status_label);
    showEnd(row, state);
    if (!row.ended || state.status !== "expired") end(row, state.status);
    // What happened (downloaded as often as allowed, unshared), in the server's words.
    if (state.time_left) setText(row, "time_left", state.time_left);
  }

  function showEnd(row, state) {
    // The words, then the moment as a <time> in the reader's zone (as rendered).
    var el = field(row, "ended");
    if (!el || el.dataset.endedAt === state.ended_at) return;
    el.dataset.endedAt = state.ended_at;
    el.textContent = state.ended;
    if (state.ended_at) {
      var moment = document.createElement("time");
      moment.className = "local-time";
      moment.setAttribute("datetime", state.ended_at);
      moment.textContent = state.ended_when;
      el.appendChild(document.createTextNode(" "));
      el.appendChild(moment);
      time.showLocalTimes(el);
    }
  }

  var timer = null;
  function poll(delay) {
    if (timer) clearTimeout(timer);
    timer = setTimeout(fetchStates, delay);
  }
  function fetchStates() {
    timer = null;
    if (!source || document.hidden) return; // visibilitychange starts it again
    var ids = rows.map(function (row) { return row.dataset.shareId; }).join(",");
    var url = source.dataset.liveUrl + "?ids=" + ids + (takesNew ? "&after=" + newest : "");
    fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (response) { return response.ok ? response.json() : Promise.reject(response.status); })
      .then(function (data) {
        rows.forEach(function (row) {
          var state = data.shares[row.dataset.shareId];
          if (state) apply(row, state);
        });
        if (data.new && data.new.length) addNew(data.new);
        poll(POLL_MS);
      })
      .catch(function () { poll(POLL_MS * 3); });
  }
  document.addEventListener("visibilitychange", function () { if (!document.hidden) poll(0); });
  tick();
  setInterval(tick, 200);
  poll(POLL_MS);
})();
