{% load static %}// The service worker of an encrypted link's page (links/static/links/receive.js):
// it answers a navigation to <scope>decrypted/<n> with file n decrypted as
// a stream, so a file of any size goes to disk a record at a time. Served by
// links.views.receive_worker at /s/<token>/receive.js, so its scope is the
// link's own URLs. The secret comes from the page by postMessage, never in a
// URL, and is forgotten once its download starts.
"use strict";
importScripts("{% static 'pages/ece.js' %}");

var ECE = self.microcloudECE;
// Connections the ciphertext may lose in one download before it gives up.
var MAX_TRIES = 5;
var DECRYPTED = /\/decrypted\/([1-9][0-9]{0,5})$/;
var handed = {}; // position -> {secret, name, size}, between the page's message and the download

self.addEventListener("install", function () { self.skipWaiting(); });
self.addEventListener("activate", function (event) { event.waitUntil(self.clients.claim()); });

self.addEventListener("message", function (event) {
  var data = event.data || {};
  var port = event.ports && event.ports[0];
  if (data.type !== "file" || !(data.secret instanceof Uint8Array) || !port) return;
  handed[String(data.position)] = { secret: data.secret, name: String(data.name), size: Number(data.size) };
  port.postMessage({ type: "ready", position: data.position });
});

self.addEventListener("fetch", function (event) {
  var url = new URL(event.request.url);
  var match = DECRYPTED.exec(url.pathname);
  if (!match || url.href.indexOf(self.registration.scope) !== 0) return;
  var file = handed[match[1]];
  delete handed[match[1]];
  if (!file) return; // not handed by the page: the server says what this URL is
  event.respondWith(download(Number(match[1]), file));
});

function tell(message) {
  var channel = new BroadcastChannel("microcloud-receive");
  channel.postMessage(Object.assign({ scope: self.registration.scope }, message));
  channel.close();
}

// 204: the navigation does nothing, the page says why.
function nothing() {
  return new Response(null, { status: 204 });
}

// The file's ciphertext from the server, read a record at a time; a
// connection lost in the middle is asked again from the first record not yet
// whole (Range), so nothing already read is fetched twice.
function Ciphertext(url) {
  this.url = url;
  this.reader = null;
  this.leftover = null;
  this.tries = 0;
}

Ciphertext.prototype.open = function (from) {
  var self_ = this;
  this.tries += 1;
  this.leftover = null;
  var headers = from ? { Range: "bytes=" + from + "-" } : {};
  return fetch(this.url, { headers: headers, credentials: "same-origin", cache: "no-store" }).then(function (response) {
    var resumed = response.status === 206 && (response.headers.get("Content-Range") || "").indexOf("bytes " + from + "-") === 0;
    var wait = Number(response.headers.get("Retry-After"));
    if (response.status === 503 && wait > 0 && self_.tries < MAX_TRIES) {
      // Still busy, or the broken connection's bytes not yet given back to
      // the link's budget: the server says when to ask again.
      return new Promise(function (resolve) { setTimeout(resolve, Math.min(wait, 10) * 1000); }).then(function () {
        return self_.open(from);
      });
    }
    if (!(from ? resumed : response.status === 200)) {
      return response.text().then(function (text) {
        var refused = new Error(text.trim());
        refused.status = response.status;
        throw refused;
      });
    }
    self_.reader = response.body.getReader();
  });
};

// Exactly `count` bytes from `offset` (fewer only at the body's end).
Ciphertext.prototype.read = function (offset, count) {
  var self_ = this;
  var out = new Uint8Array(count);
  var got = 0;
  function take(chunk) {
    var used = Math.min(chunk.length, count - got);
    out.set(chunk.subarray(0, used), got);
    got += used;
    self_.leftover = used < chunk.length ? chunk.subarray(used) : null;
  }
  function more() {
    if (got === count) return out;
    if (self_.leftover) {
      take(self_.leftover);
      return more();
    }
    return self_.reader.read().then(function (step) {
      if (step.done) return out.subarray(0, got);
      take(step.value);
      return more();
    });
  }
  function again(error) {
    if ((error && error.status) || self_.tries >= MAX_TRIES) throw error;
    return self_.open(offset).then(function () { return self_.read(offset, count); }, again);
  }
  return Promise.resolve().then(more).catch(again);
};

Ciphertext.prototype.cancel = function () {
  if (this.reader) this.reader.cancel().catch(function () {});
};

function attachment(name) {
  var encoded = encodeURIComponent(name.replace(/[\/\\]/g, "_")).replace(/['()*]/g, function (c) {
    return "%" + c.charCodeAt(0).toString(16).toUpperCase();
  });
  return "attachment; filename*=UTF-8''" + encoded;
}

function download(position, file) {
  var source = new Ciphertext(self.registration.scope + "files/" + position);
  var index = 0;
  var written = 0;
  function failed(error) {
    source.cancel();
    if (error instanceof ECE.Damaged) tell({ position: position, outcome: "damaged", record: index });
    else if (error && error.status) tell({ position: position, outcome: "refused", status: error.status, text: error.message });
    else tell({ position: position, outcome: "failed" });
    throw error;
  }
  return source
    .open(0)
    .then(function () { return source.read(0, ECE.HEADER_BYTES); })
    .then(function (head) {
      return ECE.contentKey(file.secret).then(function (key) { return ECE.cipherOfBody(key, head); });
    })
    .then(function (cipher) {
      file.secret = null;
      var body = new ReadableStream(
        {
          pull: function (controller) {
            var offset = ECE.recordOffset(index);
            return Promise.resolve()
              .then(function () { return source.read(offset, cipher.rs); })
              .then(function (record) {
                if (record.length === 0) throw new ECE.Damaged("the last record is missing: the content was cut short");
                return cipher.open(index, record).then(function (opened) {
                  if (!opened.last && record.length < cipher.rs) throw new ECE.Damaged("the last record is missing");
                  written += opened.plaintext.length;
                  controller.enqueue(opened.plaintext);
                  index += 1;
                  if (!opened.last) return;
                  return source.read(offset + record.length, 1).then(function (after) {
                    if (after.length) throw new ECE.Damaged("bytes after the last record");
                    if (written !== file.size) throw new ECE.Damaged("the file's size is not the one its link gives");
                    controller.close();
                    tell({ position: position, outcome: "done" });
                  });
                });
              })
              .catch(function (error) {
                try { failed(error); } catch (told) { controller.error(told); }
              });
          },
          cancel: function () { source.cancel(); },
        },
        new CountQueuingStrategy({ highWaterMark: 1 })
      );
      return new Response(body, {
        headers: {
          "Content-Type": "application/octet-stream",
          "Content-Disposition": attachment(file.name),
          "Content-Length": String(file.size),
          "X-Content-Type-Options": "nosniff",
        },
      });
    })
    .catch(function (error) {
      try { failed(error); } catch (told) { /* said to the page */ }
      return nothing();
    });
}
