// The "Share encrypted files" page (docs/encryption.md, "Sending from the
// browser"). One button: a new secret; each file encrypted as it is read and
// sent through tus under the neutral name encrypted-<n> (web/sealed_source.js);
// then the link, POST /api/shares/ with the stored files, the rules chosen
// and the sealed metadata (names, types, sizes and the note); with a
// password, the secret wrapped by it and the verifier as the link's password.
// The secret and the names go to IndexedDB (web/link_keys.js) and nowhere
// else: no name, key or plaintext leaves the browser. Words come from the
// form's data- attributes; each file's line is pages/upload_list.js's.
(function () {
  "use strict";
  var form = document.getElementById("encrypted-form");
  var ece = window.microcloudECE;
  var tus = window.tus;
  var supported =
    form && ece && window.microcloudE2EPassword && window.microcloudSealedSource && window.microcloudLinkKeys &&
    window.crypto && window.crypto.subtle && window.indexedDB && tus && tus.isSupported;
  if (!supported) return; // the page's warning stays, with its link to the ordinary upload
  document.getElementById("encrypted-unsupported").hidden = true;
  form.hidden = false;

  var text = form.dataset;
  var filesInput = document.getElementById("encrypted-files");
  var folderInput = document.getElementById("encrypted-folder");
  var errorBox = document.getElementById("encrypted-error");
  var sendButton = document.getElementById("encrypted-send");
  var result = document.getElementById("encrypted-result");
  var lines = window.microcloudUploadList(document.getElementById("upload-progress"), text);
  var csrf = form.querySelector('input[name="csrfmiddlewaretoken"]').value;
  // As the dashboard's uploads (web/upload.js): about two minutes of tries.
  var RETRY_DELAYS = [1000, 3000, 5000, 10000, 20000, 30000, 60000];

  if ("webkitdirectory" in folderInput) {
    folderInput.hidden = false;
    form.querySelector('label[for="encrypted-folder"]').hidden = false;
  }

  function say(message) {
    errorBox.textContent = message;
    errorBox.hidden = !message;
  }

  function chosenFiles() {
    return Array.prototype.slice.call(filesInput.files).concat(Array.prototype.slice.call(folderInput.files));
  }

  function value(name) {
    var field = form.elements[name];
    return field ? field.value : "";
  }

  // The link's rules as the API takes them, or {refused: why}.
  function rules() {
    var body = {
      notify_first_download: form.elements.notify_first_download.checked,
      remind_before_expiry: form.elements.remind_before_expiry.checked,
    };
    var lifetime = form.querySelector('input[name="lifetime"]:checked');
    if (lifetime && lifetime.value === "custom") {
      var local = value("expires_local");
      // A datetime-local value is read in the browser's own zone, as the owner meant it.
      if (!local || isNaN(new Date(local).getTime())) return { refused: text.noDeadlineText };
      // Said before any byte goes, not after the files are sent.
      if (new Date(local).getTime() <= Date.now()) return { refused: text.pastText };
      body.expires_at = new Date(local).toISOString();
    } else if (lifetime) {
      body.expires_in = Number(lifetime.value);
    }
    var limit = value("max_downloads").trim();
    if (limit) body.max_downloads = Number(limit);
    return body;
  }

  function apiErrors(answer) {
    if (!answer || typeof answer !== "object") return "";
    return Object.keys(answer)
      .map(function (key) {
        var said = answer[key];
        return Array.isArray(said) ? said.join(" ") : typeof said === "string" ? said : apiErrors(said);
      })
      .join(" ");
  }

  // Resolves to the stored file's id.
  function send(file, position, secret) {
    var shown = lines.entry(file.name);
    var meter = lines.meter(shown);
    return ece.fileCipher(secret, position).then(function (cipher) {
      return new Promise(function (resolve, reject) {
        var upload = new tus.Upload(file, {
          endpoint: text.tusEndpoint,
          chunkSize: Number(text.chunkBytes),
          retryDelays: RETRY_DELAYS,
          fileReader: window.microcloudSealedSource.reader(cipher),
          // Nothing kept for a later page: resuming needs the secret, which
          // this page does not keep until the link exists.
          storeFingerprintForResuming: false,
          fingerprint: function () { return Promise.resolve(null); },
          metadata: { filename: "encrypted-" + position, filetype: "application/octet-stream" },
          headers: { "X-CSRFToken": csrf },
          onProgress: function (sent, total) {
            if (shown.status.textContent === text.retryingText) shown.status.textContent = "";
            meter.progress(sent, total);
          },
          onShouldRetry: function (error, attempt, options) {
            var retry = tus.defaultOptions.onShouldRetry(error, attempt, options);
            if (retry) shown.status.textContent = text.retryingText;
            return retry;
          },
          onSuccess: function (payload) {
            lines.showDone(shown, file.size);
            // The stored file's address in the API, /api/files/<id>/.
            var stored = payload.lastResponse.getHeader("Upload-File") || "";
            var id = /\/(\d+)\/?$/.exec(stored);
            shown.item.dataset.file = stored;
            if (id) resolve(Number(id[1]));
            else reject(new Error("no stored file"));
          },
          onError: function (error) {
            shown.item.classList.add("error");
            shown.status.textContent = text.failedText;
            reject(error);
          },
        });
        upload.start();
      });
    });
  }

  function sendAll(files, secret) {
    var ids = [];
    return files
      .reduce(function (previous, file, index) {
        return previous.then(function () {
          return send(file, index + 1, secret).then(function (id) { ids.push(id); });
        });
      }, Promise.resolve())
      .then(function () { return ids; });
  }

  function makeLink(body) {
    return fetch(text.sharesEndpoint, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", Accept: "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify(body),
    }).then(function (response) {
      return response.json().then(
        function (answer) { return { ok: response.ok, answer: answer }; },
        function () { return { ok: false, answer: null }; }
      );
    });
  }

  function showLink(share, secret, wrapped) {
    var link = document.getElementById("encrypted-link");
    link.value = wrapped ? share.url : share.url + "#" + ece.secretText(secret);
    var note = document.getElementById("encrypted-link-note");
    note.textContent = wrapped ? note.dataset.passwordText : note.dataset.keyText;
    document.getElementById("encrypted-manage").href = text.shareUrl.replace("/0/", "/" + share.id + "/");
    form.hidden = true;
    result.hidden = false;
    if (window.microcloudCopy) window.microcloudCopy.wire(result);
    document.getElementById("encrypted-result-heading").focus();
  }

  form.addEventListener("submit", function (event) {
    event.preventDefault();
    var files = chosenFiles();
    var body = rules();
    var tooLarge = files.filter(function (file) { return ece.encryptedSize(file.size) > Number(text.maxBytes); });
    if (!files.length) return say(text.noFilesText);
    if (files.length > Number(text.maxFiles)) return say(text.tooManyText);
    if (tooLarge.length) return say(tooLarge[0].name + ": " + text.tooLargeText);
    if (body.refused) return say(body.refused);
    say("");
    var password = value("password");
    var message = value("message");
    var described = files.map(function (file) {
      return { name: file.webkitRelativePath || file.name, type: file.type || "application/octet-stream", size: file.size };
    });
    var secret = ece.newSecret();
    sendButton.disabled = true;
    sendAll(files, secret)
      .then(function (ids) {
        body.files = ids;
        var sealing = ece.sealMetadata(secret, described, message);
        var wrapping = password ? window.microcloudE2EPassword.wrap(secret, password) : Promise.resolve(null);
        return Promise.all([sealing, wrapping]);
      })
      .then(function (sealed) {
        body.sealed_metadata = sealed[0];
        if (sealed[1]) {
          body.password = sealed[1].verifier;
          body.wrapped_secret = sealed[1].wrappedSecret;
        }
        return makeLink(body);
      })
      .then(function (made) {
        if (!made.ok) {
          say(text.linkFailedText + " " + apiErrors(made.answer));
          throw new Error("no link");
        }
        var record = {
          share: made.answer.id, secret: ece.secretText(secret), files: described, message: message, wrapped: !!password,
        };
        // The link works without this; only the owner's pages miss the names.
        return window.microcloudLinkKeys.save(record).catch(function () {}).then(function () {
          showLink(made.answer, secret, !!password);
        });
      })
      .catch(function () {
        sendButton.disabled = false;
      });
  });
})();
