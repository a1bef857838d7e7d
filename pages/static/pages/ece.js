// End-to-end encrypted links in the browser (docs/encryption.md), with
// WebCrypto: the link's secret, its two HKDF keys, each file as an RFC 8188
// "aes128gcm" body computed record by record (so a file is never whole in
// memory), and the sealed metadata. The command-line client
// (client/microcloud_cli/ece.py and sealing.py) writes and reads the same
// bytes; tests check both against each other and against http_ece.
// window.microcloudECE.
(function (root) {
  "use strict";
  var subtle = root.crypto.subtle;
  var HEADER_BYTES = 21;
  var TAG_BYTES = 16;
  var RECORD_BYTES = 65536; // rs: a record's ciphertext, tag and delimiter
  var PER_RECORD = RECORD_BYTES - TAG_BYTES - 1; // plaintext bytes a record holds
  var SALT_BYTES = 16;
  var SECRET_BYTES = 16;
  var FORMAT = 1;
  var encoder = new TextEncoder();
  var INFO = {
    content: encoder.encode("microcloud e2e content key"),
    metadata: encoder.encode("microcloud e2e metadata key"),
    fileSalt: "microcloud e2e file salt ",
    cek: encoder.encode("Content-Encoding: aes128gcm\u0000"),
    nonce: encoder.encode("Content-Encoding: nonce\u0000"),
  };

  // A record that does not decrypt (the wrong key, or altered bytes), or a
  // body that is not whole: the message says which record.
  function Damaged(message) {
    this.name = "Damaged";
    this.message = message;
  }
  Damaged.prototype = Object.create(Error.prototype);
  Damaged.prototype.constructor = Damaged;

  function bytesOf(data) {
    return data instanceof Uint8Array ? data : new Uint8Array(data);
  }

  function base64url(bytes) {
    var text = "";
    bytes = bytesOf(bytes);
    for (var i = 0; i < bytes.length; i += 1) text += String.fromCharCode(bytes[i]);
    return root.btoa(text).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
  }

  // null for anything that is not URL-safe base64.
  function fromBase64url(text) {
    if (typeof text !== "string" || !/^[A-Za-z0-9_-]*$/.test(text) || text.length % 4 === 1) return null;
    var plain = root.atob(text.replace(/-/g, "+").replace(/_/g, "/") + "===".slice((text.length + 3) % 4));
    var bytes = new Uint8Array(plain.length);
    for (var i = 0; i < plain.length; i += 1) bytes[i] = plain.charCodeAt(i);
    return bytes;
  }

  function newSecret() {
    return root.crypto.getRandomValues(new Uint8Array(SECRET_BYTES));
  }

  function secretText(secret) {
    return base64url(secret);
  }

  // The secret written after a link's "#"; null when it is not one of this format's.
  function secretFromText(text) {
    var secret = fromBase64url(String(text || "").replace(/^#/, ""));
    return secret && secret.length === SECRET_BYTES ? secret : null;
  }

  function hkdf(key, salt, info, length) {
    return subtle
      .importKey("raw", key, "HKDF", false, ["deriveBits"])
      .then(function (material) {
        return subtle.deriveBits({ name: "HKDF", hash: "SHA-256", salt: salt, info: info }, material, length * 8);
      })
      .then(bytesOf);
  }

  function hmac(key, data) {
    return subtle
      .importKey("raw", key, { name: "HMAC", hash: "SHA-256" }, false, ["sign"])
      .then(function (material) { return subtle.sign("HMAC", material, data); })
      .then(bytesOf);
  }

  function linkKey(secret, info) {
    return hkdf(secret, new Uint8Array(0), info, 16);
  }

  // The input key of every file body of the link (cipherOfBody's inputKey).
  function contentKey(secret) {
    return linkKey(secret, INFO.content);
  }

  // Each file's salt is derived from its position in the link, not drawn, so
  // a retried or resumed upload sends the very bytes it began with.
  function fileSalt(secret, position) {
    return hmac(secret, encoder.encode(INFO.fileSalt + String(position))).then(function (mac) {
      return mac.slice(0, SALT_BYTES);
    });
  }

  function header(salt, rs) {
    var bytes = new Uint8Array(HEADER_BYTES);
    bytes.set(salt, 0);
    new DataView(bytes.buffer).setUint32(SALT_BYTES, rs);
    return bytes; // the key id length (the last byte) is 0
  }

  function parseHeader(data) {
    data = bytesOf(data);
    if (data.length < HEADER_BYTES) throw new Damaged("too short to be encrypted content");
    var rs = new DataView(data.buffer, data.byteOffset, data.byteLength).getUint32(SALT_BYTES);
    if (rs < TAG_BYTES + 2 || data[HEADER_BYTES - 1] !== 0) {
      throw new Damaged("not content encrypted by this format (its header)");
    }
    return { salt: data.slice(0, SALT_BYTES), rs: rs };
  }

  // The content key and nonce of one body (one input key, one salt).
  function Cipher(aesKey, nonce, head) {
    this.key = aesKey;
    this.baseNonce = nonce;
    this.header = header(head.salt, head.rs);
    this.rs = head.rs;
  }

  Cipher.prototype.nonce = function (index) {
    var nonce = this.baseNonce.slice();
    for (var k = 0; k < 6; k += 1) {
      nonce[11 - k] ^= Math.floor(index / Math.pow(256, k)) & 0xff;
    }
    return nonce;
  };

  // Record `index` of the body: the plaintext and its delimiter (2 in the last).
  Cipher.prototype.seal = function (index, plaintext, last) {
    plaintext = bytesOf(plaintext);
    var padded = new Uint8Array(plaintext.length + 1);
    padded.set(plaintext, 0);
    padded[plaintext.length] = last ? 2 : 1;
    return subtle
      .encrypt({ name: "AES-GCM", iv: this.nonce(index), tagLength: 128 }, this.key, padded)
      .then(bytesOf);
  };

  // Resolves to {plaintext, last}; rejects with Damaged naming the record.
  Cipher.prototype.open = function (index, record) {
    return subtle.decrypt({ name: "AES-GCM", iv: this.nonce(index), tagLength: 128 }, this.key, record).then(
      function (padded) {
        var body = bytesOf(padded);
        var end = body.length;
        while (end > 0 && body[end - 1] === 0) end -= 1;
        if (end === 0 || (body[end - 1] !== 1 && body[end - 1] !== 2)) {
          throw new Damaged("record " + index + " has no delimiter");
        }
        return { plaintext: body.subarray(0, end - 1), last: body[end - 1] === 2 };
      },
      function () {
        throw new Damaged("record " + index + " does not decrypt: the wrong key, or altered bytes");
      }
    );
  };

  function cipherFor(inputKey, head) {
    return Promise.all([hkdf(inputKey, head.salt, INFO.cek, 16), hkdf(inputKey, head.salt, INFO.nonce, 12)]).then(
      function (derived) {
        return subtle.importKey("raw", derived[0], "AES-GCM", false, ["encrypt", "decrypt"]).then(function (key) {
          return new Cipher(key, derived[1], head);
        });
      }
    );
  }

  // The cipher of the file at `position` (1, 2, ...) of the link.
  function fileCipher(secret, position) {
    return Promise.all([linkKey(secret, INFO.content), fileSalt(secret, position)]).then(function (keys) {
      return cipherFor(keys[0], { salt: keys[1], rs: RECORD_BYTES });
    });
  }

  // The cipher of a body whose header is `data`'s first bytes.
  function cipherOfBody(inputKey, data) {
    return Promise.resolve().then(function () { return cipherFor(inputKey, parseHeader(data)); });
  }

  function recordsFor(size) {
    return Math.max(1, Math.ceil(size / PER_RECORD));
  }

  function encryptedSize(size) {
    return HEADER_BYTES + size + recordsFor(size) * (TAG_BYTES + 1);
  }

  function recordOffset(index) {
    return HEADER_BYTES + index * RECORD_BYTES;
  }

  // A whole body at once: small things only (the metadata).
  function encryptBody(inputKey, plaintext, salt) {
    plaintext = bytesOf(plaintext);
    return cipherFor(inputKey, { salt: salt, rs: RECORD_BYTES }).then(function (cipher) {
      var count = recordsFor(plaintext.length);
      var records = [];
      for (var i = 0; i < count; i += 1) {
        records.push(cipher.seal(i, plaintext.subarray(i * PER_RECORD, (i + 1) * PER_RECORD), i === count - 1));
      }
      return Promise.all(records).then(function (sealed) {
        var parts = [cipher.header].concat(sealed);
        var total = parts.reduce(function (sum, part) { return sum + part.length; }, 0);
        var out = new Uint8Array(total);
        var at = 0;
        parts.forEach(function (part) { out.set(part, at); at += part.length; });
        return out;
      });
    });
  }

  function decryptBody(inputKey, body) {
    body = bytesOf(body);
    return cipherOfBody(inputKey, body).then(function (cipher) {
      var pieces = [];
      function next(index) {
        var start = HEADER_BYTES + index * cipher.rs;
        if (start >= body.length && index > 0) throw new Damaged("the last record is missing: the content was cut short");
        return cipher.open(index, body.subarray(start, start + cipher.rs)).then(function (opened) {
          pieces.push(opened.plaintext);
          if (!opened.last) return next(index + 1);
          if (start + cipher.rs < body.length) throw new Damaged("bytes after the last record");
          var total = pieces.reduce(function (sum, piece) { return sum + piece.length; }, 0);
          var out = new Uint8Array(total);
          var at = 0;
          pieces.forEach(function (piece) { out.set(piece, at); at += piece.length; });
          return out;
        });
      }
      return next(0);
    });
  }

  // The names, types, sizes and the note as one sealed blob (URL-safe base64).
  function sealMetadata(secret, files, message) {
    var document = encoder.encode(JSON.stringify({ format: FORMAT, files: files, message: message || "" }));
    var salt = root.crypto.getRandomValues(new Uint8Array(SALT_BYTES));
    return linkKey(secret, INFO.metadata)
      .then(function (key) { return encryptBody(key, document, salt); })
      .then(base64url);
  }

  // Resolves to the document; rejects with Damaged when the secret does not
  // open it, or with an Error for a format this page does not know.
  function openMetadata(secret, blob) {
    return linkKey(secret, INFO.metadata)
      .then(function (key) { return decryptBody(key, blob); })
      .then(function (plain) {
        var document = JSON.parse(new TextDecoder().decode(plain));
        if (!document || document.format !== FORMAT) throw new Error("unknown format");
        return document;
      });
  }

  root.microcloudECE = {
    HEADER_BYTES: HEADER_BYTES,
    TAG_BYTES: TAG_BYTES,
    RECORD_BYTES: RECORD_BYTES,
    PER_RECORD: PER_RECORD,
    Damaged: Damaged,
    base64url: base64url,
    fromBase64url: fromBase64url,
    newSecret: newSecret,
    secretText: secretText,
    secretFromText: secretFromText,
    hkdf: hkdf,
    contentKey: contentKey,
    fileCipher: fileCipher,
    cipherOfBody: cipherOfBody,
    recordsFor: recordsFor,
    encryptedSize: encryptedSize,
    recordOffset: recordOffset,
    encryptBody: encryptBody,
    decryptBody: decryptBody,
    sealMetadata: sealMetadata,
    openMetadata: openMetadata,
  };
})(typeof window !== "undefined" ? window : globalThis);
