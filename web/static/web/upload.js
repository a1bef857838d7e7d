// Uploads with a progress bar per file: choosing or dropping files sends
// them one request each (the server answers JSON), refusing any file over
// the size limit before sending it. Without JavaScript the form posts all
// chosen files at once and the server answers with a page.
(function () {
  "use strict";
  var form = document.getElementById("upload-form");
  if (!form) return;
  var input = form.querySelector('input[type="file"]');
  var list = document.getElementById("upload-progress");
  var zone = document.getElementById("drop-zone");
  var maxBytes = Number(form.dataset.maxBytes);
  var csrf = form.querySelector('input[name="csrfmiddlewaretoken"]').value;
  form.classList.add("scripted"); // the Upload button goes: choosing sends

  function entry(file) {
    var item = document.createElement("li");
    var name = document.createElement("span");
    name.className = "upload-name";
    name.textContent = file.name;
    var bar = document.createElement("progress");
    bar.max = 100;
    bar.value = 0;
    bar.setAttribute("aria-label", form.dataset.sendingText + " " + file.name);
    var status = document.createElement("span");
    status.className = "upload-status";
    item.append(name, bar, status);
    list.append(item);
    return { item: item, bar: bar, status: status };
  }

  function refusal(xhr) {
    try { return JSON.parse(xhr.responseText).detail; } catch (e) { return xhr.responseText.trim(); }
  }

  function send(file) {
    var shown = entry(file);
    if (file.size > maxBytes) {
      shown.item.classList.add("error");
      shown.bar.remove();
      shown.status.textContent = form.dataset.tooLargeText;
      return Promise.resolve(false);
    }
    return new Promise(function (resolve) {
      var xhr = new XMLHttpRequest();
      xhr.open("POST", form.action);
      xhr.setRequestHeader("Accept", "application/json");
      xhr.setRequestHeader("X-CSRFToken", csrf);
      xhr.upload.addEventListener("progress", function (event) {
        if (event.lengthComputable) shown.bar.value = Math.round(event.loaded * 100 / event.total);
      });
      xhr.addEventListener("load", function () {
        var ok = xhr.status === 201;
        shown.item.classList.add(ok ? "done" : "error");
        if (ok) shown.bar.value = 100;
        shown.status.textContent = ok ? form.dataset.doneText : form.dataset.failedText + ": " + refusal(xhr);
        resolve(ok);
      });
      xhr.addEventListener("error", function () {
        shown.item.classList.add("error");
        shown.status.textContent = form.dataset.failedText;
        resolve(false);
      });
      var data = new FormData();
      data.append("files", file);
      xhr.send(data);
    });
  }

  function refreshFiles() {
    // The file list as the server now renders it, without a reload.
    return fetch(window.location.href, { credentials: "same-origin" })
      .then(function (response) { return response.text(); })
      .then(function (html) {
        var fresh = new DOMParser().parseFromString(html, "text/html").getElementById("files");
        var current = document.getElementById("files");
        if (fresh && current) {
          current.replaceWith(fresh);
          window.microcloudTime.showLocalTimes(fresh);
        }
      });
  }

  function sendAll(files) {
    var sent = 0;
    var chain = Promise.resolve();
    files.forEach(function (file) {
      chain = chain.then(function () { return send(file); }).then(function (ok) { if (ok) sent += 1; });
    });
    return chain.then(function () {
      input.value = "";
      if (sent) return refreshFiles();
    });
  }

  input.addEventListener("change", function () { sendAll(Array.prototype.slice.call(input.files)); });
  form.addEventListener("submit", function (event) {
    event.preventDefault();
    sendAll(Array.prototype.slice.call(input.files));
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
})();
