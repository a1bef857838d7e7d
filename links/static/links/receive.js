// An encrypted link's page (links/templates/links/_receive.html): the secret
// is read from location.hash and never leaves this page but for this
// origin's own service worker (links/templates/links/receive_worker.js),
// by postMessage. The page opens the sealed metadata to list the files;
// each download is decrypted by the worker as a stream to disk; images small
// enough are decrypted here into blob: URLs. docs/encryption.md.
(function () {
  "use strict";
  var box = document.querySelector("[data-receive]");
  if (!box) return;
  var ECE = window.microcloudECE;
  var texts = box.dataset;
  var status = box.querySelector("[data-receive-status]");
  var list = box.querySelector("[data-receive-files]");
  var entryTemplate = box.querySelector("[data-receive-entry]");
  var previewTypes = ["image/png", "image/jpeg", "image/gif", "image/webp"];
  var workerUrl = new URL(texts.workerUrl, window.location.href).href;
  var scope = new URL("./", workerUrl).href;
  var entries = {}; // position -> the file's <li>
  box.hidden = false;

  function say(text) {
    status.textContent = text;
    status.hidden = !text;
  }

  function size(bytes) {
    return window.microcloudUnits ? window.microcloudUnits.size(bytes) : bytes + " B";
  }

  var secret = ECE.secretFromText(window.location.hash);
  if (window.location.hash.replace(/^#/, "") === "") {
    say(texts.textMissing);
    return;
  }
  if (!secret) {
    say(texts.textWrong);
    return;
  }

  fetch(texts.sealedUrl, { credentials: "same-origin", cache: "no-store" })
    .then(function (response) {
      if (!response.ok) {
        return response.text().then(function (text) {
          throw new Refused(text.trim());
        });
      }
      return response.arrayBuffer();
    })
    .then(function (blob) { return ECE.openMetadata(secret, new Uint8Array(blob)); })
    .then(show, function (error) {
      if (error instanceof Refused) say(error.message);
      else if (error instanceof ECE.Damaged) say(texts.textWrong);
      else if (error instanceof TypeError) say(texts.textUnreachable);
      else say(texts.textUnknown);
    });

  function Refused(message) {
    this.message = message;
  }

  function show(document_) {
    var files = document_.files || [];
    var title = document.querySelector("[data-receive-title]");
    if (title && files.length === 1) {
      title.textContent = files[0].name;
      document.title = files[0].name + " · Microcloud";
    }
    if (document_.message) {
      var figure = document.querySelector("[data-receive-message]");
      figure.querySelector("blockquote").textContent = document_.message;
      figure.hidden = false;
    }
    say("");
    document.getElementById("files-heading").hidden = false;
    files.forEach(function (file, index) {
      var position = index + 1;
      var item = entryTemplate.content.firstElementChild.cloneNode(true);
      item.querySelector(".file-name").textContent = file.name;
      item.querySelector("[data-size]").textContent = size(file.size);
      item.querySelector("[data-type]").textContent = file.type || "application/octet-stream";
      item.querySelector(".visually-hidden").textContent = " " + file.name;
      item.querySelector("[data-download-file]").addEventListener("click", function () {
        download(position, file, item);
      });
      entries[position] = item;
      list.appendChild(item);
      if (texts.previews && previewTypes.indexOf(file.type) !== -1 && file.size <= Number(texts.previewMax)) {
        preview(position, file, item);
      }
    });
  }

  function fileStatus(item, text, problem) {
    var line = item.querySelector(".file-status");
    line.textContent = text;
    line.classList.toggle("error", Boolean(problem));
  }

  // The registered worker once it is active (this page is outside its scope,
  // so navigator.serviceWorker.ready would never resolve here).
  function activeWorker() {
    if (!("serviceWorker" in navigator)) return Promise.reject(new Error("no service workers"));
    return navigator.serviceWorker.register(workerUrl).then(function (registration) {
      return new Promise(function (resolve) {
        function check() {
          if (registration.active) {
            resolve(registration.active);
            return true;
          }
          return false;
        }
        if (check()) return;
        var coming = registration.installing || registration.waiting;
        coming.addEventListener("statechange", check);
      });
    });
  }

  function hand(worker, position, file) {
    return new Promise(function (resolve) {
      var channel = new MessageChannel();
      channel.port1.onmessage = function () { resolve(); };
      worker.postMessage({ type: "file", position: position, name: file.name, size: file.size, secret: secret }, [
        channel.port2,
      ]);
    });
  }

  function download(position, file, item) {
    fileStatus(item, texts.textDownloading);
    activeWorker()
      .then(function (worker) { return hand(worker, position, file); })
      .then(function () { window.location.assign(scope + "decrypted/" + position); })
      .catch(function () { fileStatus(item, texts.textNoWorker, true); });
  }

  // Kept in a variable: a channel nothing refers to may be collected, and its messages lost.
  var news_ = "BroadcastChannel" in window ? new BroadcastChannel("microcloud-receive") : null;
  if (news_) {
    news_.onmessage = function (event) {
      var news = event.data || {};
      var item = news.scope === scope && entries[news.position];
      if (!item) return;
      if (news.outcome === "done") fileStatus(item, texts.textDone);
      else if (news.outcome === "damaged") fileStatus(item, texts.textDamaged.replace("{n}", String(news.record)), true);
      else if (news.outcome === "refused") fileStatus(item, news.text, true);
      else fileStatus(item, texts.textFailed, true);
    };
  }

  // Fetched whole (small files only) as a preview, which counts no download.
  function preview(position, file, item) {
    var url = scope + "files/" + position + "/preview";
    fetch(url, { credentials: "same-origin", cache: "no-store" })
      .then(function (response) {
        if (!response.ok) throw new Error("no preview");
        return response.arrayBuffer();
      })
      .then(function (body) {
        return ECE.contentKey(secret).then(function (key) { return ECE.decryptBody(key, new Uint8Array(body)); });
      })
      .then(function (plain) {
        var box_ = item.querySelector(".preview");
        var image = box_.querySelector("img");
        image.src = URL.createObjectURL(new Blob([plain], { type: file.type }));
        image.alt = texts.textPreview.replace("{name}", file.name);
        box_.hidden = false;
      })
      .catch(function () { /* no preview: the Download button stays */ });
  }
})();
