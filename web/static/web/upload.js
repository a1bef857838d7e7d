// Uploads through /api/uploads/ with tus-js-client (web/static/vendor/), so
// a big file goes in chunks and a broken upload goes on from where the server
// says it stopped: after a dropped connection (retried by itself), a pause,
// or a reload of the page (choosing the same file again finds its upload in
// localStorage). Each file shows its progress, bytes, speed and time left,
// with Pause/Resume and Cancel (which deletes the upload on the server).
// Every word shown comes from the form's data- attributes, translated by the
// template; each file's line is drawn by pages/upload_list.js. Without JavaScript (or without what tus-js-client needs)
// the form posts all chosen files at once and the server answers with a page.
(function () {
  "use strict";
  var form = document.getElementById("upload-form");
  if (!form || !window.tus || !window.tus.isSupported) return;
  var tus = window.tus;
  // Files, and a folder (webkitdirectory: every file inside it).
  var inputs = Array.prototype.slice.call(form.querySelectorAll('input[type="file"]'));
  var list = document.getElementById("upload-progress");
  var zone = document.getElementById("drop-zone");
  var text = form.dataset;
  var maxBytes = Number(text.maxBytes);
  var chunkBytes = Number(text.chunkBytes);
  var csrf = form.querySelector('input[name="csrfmiddlewaretoken"]').value;
  var lines = window.microcloudUploadList(list, text);
  // Waits before each new try after a failed request: about two minutes in
  // all, reset whenever a try moves the upload on.
  var RETRY_DELAYS = [1000, 3000, 5000, 10000, 20000, 30000, 60000];
  var uploads = []; // every file sent from this page, in the order chosen
  var listChanged = false; // a file was stored or space given back since the last refresh
  form.classList.add("scripted"); // the Upload button goes: choosing sends
  // The plain input gives way to styled buttons that open the inputs, and
  // the zone says it takes a drop (only now that dropping works).
  var plain = document.getElementById("id_files");
  plain.hidden = true;
  form.querySelector('label[for="id_files"]').hidden = true;
  zone.querySelector(".drop-hint").hidden = false;
  zone.querySelector(".choose-buttons").hidden = false;
  Array.prototype.slice.call(zone.querySelectorAll("button[data-opens]")).forEach(function (opener) {
    var input = document.getElementById(opener.dataset.opens);
    if (input.id === "id_folder") opener.hidden = !("webkitdirectory" in input);
    opener.addEventListener("click", function () { input.click(); });
  });

  function button(label, fileName) {
    var element = document.createElement("button");
    element.type = "button";
    element.className = "small secondary";
    var words = document.createElement("span");
    words.textContent = label;
    var name = document.createElement("span");
    name.className = "visually-hidden";
    name.textContent = " " + fileName;
    element.append(words, name);
    element.setLabel = function (newLabel) { words.textContent = newLabel; };
    return element;
  }

  function serverMessage(error) {
    var response = error && error.originalResponse;
    if (!response) return "";
    try {
      return JSON.parse(response.getBody()).detail || "";
    } catch (e) {
      return "";
    }
  }

  function refreshFiles() {
    // The file list and storage use as the server now renders them, without a reload.
    return fetch(window.location.href, { credentials: "same-origin" })
      .then(function (response) { return response.text(); })
      .then(function (html) {
        var page = new DOMParser().parseFromString(html, "text/html");
        // The dashboard's files and storage; an upload request's places left.
        ["files", "storage", "request-places"].forEach(function (id) {
          var fresh = page.getElementById(id);
          var current = document.getElementById(id);
          if (fresh && current) {
            current.replaceWith(fresh);
            window.microcloudTime.showLocalTimes(fresh);
          }
        });
        // A request that has just filled up takes nothing more: nothing to choose with.
        if (document.getElementById("request-full")) {
          zone.hidden = true;
          inputs.forEach(function (input) { input.disabled = true; });
        }
      });
  }

  function refreshWhenSettled() {
    // One refresh when nothing is moving any more, not one per file.
    var moving = uploads.some(function (one) { return one.state === "sending"; });
    if (listChanged && !moving) {
      listChanged = false;
      refreshFiles();
    }
  }

  function Transfer(file) {
    this.file = file;
    this.shown = lines.entry(file.name);
    this.meter = lines.meter(this.shown);
    this.state = "new";
    uploads.push(this);
  }

  Transfer.prototype.refuse = function (message) {
    this.state = "failed";
    this.shown.item.classList.add("error");
    this.shown.status.textContent = message;
  };

  Transfer.prototype.begin = function () {
    var self = this;
    var file = this.file;
    if (file.size > maxBytes) {
      this.shown.bar.remove();
      this.refuse(text.tooLargeText);
      return;
    }
    var metadata = { filename: file.name };
    if (file.type) metadata.filetype = file.type;
    this.upload = new tus.Upload(file, {
      endpoint: text.tusEndpoint,
      chunkSize: chunkBytes,
      retryDelays: RETRY_DELAYS,
      removeFingerprintOnSuccess: true,
      metadata: metadata,
      // The session authenticates; Django's CSRF check wants the token on
      // every request that changes something (POST, PATCH, DELETE).
      headers: { "X-CSRFToken": csrf },
      onProgress: function (sent, total) { self.progress(sent, total); },
      onShouldRetry: function (error, attempt, options) {
        var retry = tus.defaultOptions.onShouldRetry(error, attempt, options);
        if (retry) self.say(text.retryingText);
        return retry;
      },
      onSuccess: function (payload) { self.finished(payload.lastResponse); },
      onError: function (error) { self.failed(error); },
    });
    this.buildActions();
    // Without a readable localStorage there is nothing to resume: a new upload.
    var found = this.upload.findPreviousUploads().catch(function () { return []; });
    found.then(function (previous) {
      // The newest upload of this same file that this page is not already sending.
      var inUse = uploads.map(function (one) { return one.upload && one.upload.url; });
      var candidates = previous.filter(function (one) { return inUse.indexOf(one.uploadUrl) < 0; });
      candidates.sort(function (a, b) { return Date.parse(b.creationTime) - Date.parse(a.creationTime); });
      if (candidates.length) {
        self.upload.resumeFromPreviousUpload(candidates[0]);
        self.say(text.resumingText);
      }
      if (self.state === "new") self.start();
    });
  };

  Transfer.prototype.buildActions = function () {
    var self = this;
    this.pauseButton = button(text.pauseText, this.file.name);
    this.pauseButton.addEventListener("click", function () {
      if (self.state === "sending") self.pause();
      else if (self.state === "paused" || self.state === "offline") self.start();
    });
    this.cancelButton = button(text.cancelText, this.file.name);
    this.cancelButton.addEventListener("click", function () { self.cancel(); });
    this.shown.actions.append(this.pauseButton, this.cancelButton);
  };

  Transfer.prototype.say = function (message) {
    this.shown.status.textContent = message;
  };

  Transfer.prototype.start = function () {
    this.state = "sending";
    this.meter.reset();
    this.pauseButton.setLabel(text.pauseText);
    this.shown.item.classList.remove("paused", "error");
    if (this.shown.status.textContent !== text.resumingText) this.say("");
    this.upload.start();
  };

  Transfer.prototype.pause = function () {
    this.state = "paused";
    this.upload.abort();
    this.pauseButton.setLabel(text.resumeText);
    this.shown.item.classList.add("paused");
    this.say(text.pausedText);
    this.meter.still();
    refreshWhenSettled();
  };

  Transfer.prototype.cancel = function () {
    var self = this;
    this.state = "cancelled";
    this.shown.actions.replaceChildren();
    this.upload.abort(true).then(
      function () {
        self.shown.item.classList.add("cancelled");
        self.say(text.cancelledText);
        self.shown.bar.value = 0;
        ["percent", "bytes", "speed", "eta"].forEach(function (field) { self.shown.fields[field].textContent = ""; });
        listChanged = true; // the space it had set aside is free again
        refreshWhenSettled();
      },
      function (error) { self.refuse(text.failedText + (serverMessage(error) ? ": " + serverMessage(error) : "")); }
    );
  };

  Transfer.prototype.progress = function (sent, total) {
    if (this.state !== "sending") return;
    if (this.shown.status.textContent === text.retryingText) this.say(""); // moving again
    this.meter.progress(sent, total);
  };

  Transfer.prototype.finished = function (response) {
    this.state = "done";
    lines.showDone(this.shown, this.file.size);
    var stored = response && response.getHeader("Upload-File");
    if (stored) this.shown.item.dataset.file = stored;
    listChanged = true;
    refreshWhenSettled();
  };

  Transfer.prototype.failed = function (error) {
    var message = serverMessage(error);
    if (!error.originalResponse && this.upload.url) {
      // The network went, and tus-js-client stopped trying (it does not while
      // the browser is offline): go on when it is back, or on Resume.
      this.state = "offline";
      this.pauseButton.setLabel(text.resumeText);
      this.say(navigator.onLine ? text.failedText : text.retryingText);
    } else {
      this.shown.actions.replaceChildren();
      this.refuse(text.failedText + (message ? ": " + message : ""));
    }
    refreshWhenSettled();
  };

  window.addEventListener("online", function () {
    uploads.forEach(function (one) { if (one.state === "offline") one.start(); });
  });

  function sendAll(files) {
    files.forEach(function (file) { new Transfer(file).begin(); });
  }

  function sendChosen(input) {
    sendAll(Array.prototype.slice.call(input.files));
    input.value = ""; // the same file can be chosen again, e.g. to resume it
  }

  inputs.forEach(function (input) {
    input.addEventListener("change", function () { sendChosen(input); });
  });
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    inputs.forEach(sendChosen);
  });
  ["dragenter", "dragover"].forEach(function (type) {
    zone.addEventListener(type, function (event) { event.preventDefault(); zone.classList.add("dragging"); });
  });
  ["dragleave", "drop"].forEach(function (type) {
    zone.addEventListener(type, function () { zone.classList.remove("dragging"); });
  });
  zone.addEventListener("drop", function (event) {
    event.preventDefault();
    sendAll(Array.prototype.slice.call(event.dataTransfer.files));
  });
  // Files chosen while the page was still loading found no listener: send them now.
  inputs.forEach(function (input) { if (input.files.length) sendChosen(input); });
})();
