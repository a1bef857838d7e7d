// A list of files being uploaded, each as one line: its name, a bar, a
// status, and figures (per cent, bytes, speed, time left) read on demand.
// The dashboard's and an upload request's uploads (web/upload.js) and the
// encrypted share page (web/encrypted_share.js) show their files alike.
// Every word comes from the form's data- attributes (`text`), translated by
// the template; sizes read as the server prints them (pages/units.js),
// durations and percentages are formatted in the page's language.
// window.microcloudUploadList(list, text) -> {size, fill, entry, meter, showDone}.
(function () {
  "use strict";
  // Speed is measured over windows at least this long, then smoothed, so it
  // does not jump with every progress event.
  var SPEED_WINDOW_MS = 500;
  var SPEED_WEIGHT = 0.3; // of the newest window against the running figure
  var FIELDS = ["percent", "bytes", "speed", "eta"];

  function uploadList(list, text) {
    var lang = document.documentElement.lang || undefined;

    function unit(value, name) {
      return new Intl.NumberFormat(lang, {
        style: "unit", unit: name, unitDisplay: "short", minimumFractionDigits: 0, maximumFractionDigits: 0,
      }).format(value);
    }

    function fill(template, values) {
      return template.replace(/\{(\w+)\}/g, function (whole, key) { return key in values ? values[key] : whole; });
    }

    function size(bytes, perSecond) {
      var words = window.microcloudUnits.size(bytes);
      return perSecond ? fill(text.speedText, { size: words }) : words;
    }

    function duration(seconds) {
      seconds = Math.ceil(seconds);
      if (seconds < 60) return unit(seconds, "second");
      var minutes = Math.round(seconds / 60);
      if (minutes < 60) return unit(minutes, "minute");
      var hours = Math.floor(minutes / 60);
      minutes %= 60;
      return unit(hours, "hour") + (minutes ? " " + unit(minutes, "minute") : "");
    }

    function percent(fraction) {
      return new Intl.NumberFormat(lang, { style: "percent", maximumFractionDigits: 0 }).format(fraction);
    }

    // One file's line, appended to the list.
    function entry(fileName) {
      var item = document.createElement("li");
      var name = document.createElement("span");
      name.className = "upload-name";
      name.textContent = fileName;
      var bar = document.createElement("progress");
      bar.max = 100;
      bar.value = 0;
      bar.setAttribute("aria-label", text.sendingText + " " + fileName);
      var status = document.createElement("span");
      status.className = "upload-status";
      // The figures change many times a second: read on demand, not announced.
      var stats = document.createElement("span");
      stats.className = "upload-stats";
      stats.setAttribute("aria-live", "off");
      var fields = {};
      FIELDS.forEach(function (field) {
        fields[field] = document.createElement("span");
        fields[field].dataset.stat = field;
        stats.append(fields[field]);
      });
      var actions = document.createElement("span");
      actions.className = "upload-actions";
      actions.setAttribute("aria-live", "off");
      item.append(name, bar, status, stats, actions);
      list.append(item);
      return { item: item, bar: bar, status: status, fields: fields, actions: actions };
    }

    // The bar and figures of one line as bytes go; reset() when it starts
    // again, so the time away is not part of the speed.
    function meter(shown) {
      var speed = 0;
      var mark = null;
      return {
        reset: function () { speed = 0; mark = null; },
        still: function () { shown.fields.speed.textContent = ""; shown.fields.eta.textContent = ""; },
        progress: function (sent, total) {
          var now = performance.now();
          if (mark === null) {
            mark = { time: now, bytes: sent };
          } else if (now - mark.time >= SPEED_WINDOW_MS) {
            var rate = ((sent - mark.bytes) * 1000) / (now - mark.time);
            speed = speed ? speed + SPEED_WEIGHT * (rate - speed) : rate;
            mark = { time: now, bytes: sent };
          }
          var fraction = total ? sent / total : 0;
          shown.bar.value = Math.floor(fraction * 100);
          shown.fields.percent.textContent = percent(Math.floor(fraction * 100) / 100);
          shown.fields.bytes.textContent = fill(text.bytesText, { sent: size(sent), total: size(total) });
          if (speed > 0) {
            shown.fields.speed.textContent = size(speed, true);
            shown.fields.eta.textContent = fill(text.timeLeftText, { time: duration((total - sent) / speed) });
          }
        },
      };
    }

    // A line whose file is stored: its whole size, no speed or time left.
    function showDone(shown, bytes) {
      shown.actions.replaceChildren();
      shown.item.classList.add("done");
      shown.bar.value = 100;
      shown.fields.percent.textContent = percent(1);
      shown.fields.bytes.textContent = size(bytes);
      shown.fields.speed.textContent = "";
      shown.fields.eta.textContent = "";
      shown.status.textContent = text.doneText;
    }

    return { size: size, fill: fill, entry: entry, meter: meter, showDone: showDone };
  }

  window.microcloudUploadList = uploadList;
})();
