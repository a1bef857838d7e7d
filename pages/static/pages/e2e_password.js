// A password instead of the #fragment on an encrypted link
// (docs/encryption.md, "A password instead of the fragment"). The link's
// secret is wrapped with a key derived from the password; the server keeps
// the wrapped secret and checks only a verifier derived beside that key, as
// the link's password, under the links' usual throttles. Neither the
// password nor the secret leaves the browser. The command-line client
// (client/microcloud_cli) derives the same bytes. window.microcloudE2EPassword.
//
// The wrapped secret, 65 bytes, sent and served as URL-safe base64:
//   version 1 (1 byte) | PBKDF2 iterations (4, big-endian) | salt (16)
//   | AES-GCM nonce (12) | the secret encrypted, with its tag (32)
// with the first 21 bytes as the AES-GCM additional data.
(function (root) {
  "use strict";
  var ece = root.microcloudECE;
  var subtle = root.crypto.subtle;
  var encoder = new TextEncoder();
  var VERSION = 1;
  var ITERATIONS = 600000; // PBKDF2-SHA256 at about a third of a second in a browser
  var PARAMETERS_BYTES = 21;
  var WRAPPED_BYTES = 65;
  var WRAPPING_INFO = encoder.encode("microcloud e2e wrapping key");
  var VERIFIER_INFO = encoder.encode("microcloud e2e password verifier");

  function derive(password, salt, iterations) {
    return subtle
      .importKey("raw", encoder.encode(String(password).normalize("NFC")), "PBKDF2", false, ["deriveBits"])
      .then(function (material) {
        return subtle.deriveBits({ name: "PBKDF2", hash: "SHA-256", salt: salt, iterations: iterations }, material, 256);
      })
      .then(function (bits) {
        bits = new Uint8Array(bits);
        var empty = new Uint8Array(0);
        return Promise.all([ece.hkdf(bits, empty, WRAPPING_INFO, 16), ece.hkdf(bits, empty, VERIFIER_INFO, 16)]);
      })
      .then(function (keys) {
        return subtle.importKey("raw", keys[0], "AES-GCM", false, ["encrypt", "decrypt"]).then(function (key) {
          return { key: key, verifier: ece.base64url(keys[1]) };
        });
      });
  }

  function parametersBytes(salt, iterations) {
    var bytes = new Uint8Array(PARAMETERS_BYTES);
    bytes[0] = VERSION;
    new DataView(bytes.buffer).setUint32(1, iterations);
    bytes.set(salt, 5);
    return bytes;
  }

  // Resolves to {verifier, wrappedSecret}: the verifier is sent as the
  // link's password, the wrapped secret beside the sealed metadata.
  function wrap(secret, password, iterations) {
    iterations = iterations || ITERATIONS;
    var salt = root.crypto.getRandomValues(new Uint8Array(16));
    var nonce = root.crypto.getRandomValues(new Uint8Array(12));
    var head = parametersBytes(salt, iterations);
    return derive(password, salt, iterations).then(function (derived) {
      return subtle
        .encrypt({ name: "AES-GCM", iv: nonce, additionalData: head, tagLength: 128 }, derived.key, secret)
        .then(function (sealed) {
          var out = new Uint8Array(WRAPPED_BYTES);
          out.set(head, 0);
          out.set(nonce, PARAMETERS_BYTES);
          out.set(new Uint8Array(sealed), PARAMETERS_BYTES + 12);
          return { verifier: derived.verifier, wrappedSecret: ece.base64url(out) };
        });
    });
  }

  // `parameters` as GET /s/<token>/key answers: {kdf, iterations, salt}.
  // Resolves to {verifier, open(wrappedSecret)}; open resolves to the secret,
  // or rejects with microcloudECE.Damaged when the password is not the one.
  function unlock(password, parameters) {
    var salt = ece.fromBase64url(parameters.salt);
    if (parameters.kdf !== "PBKDF2-SHA256" || !salt || salt.length !== 16) {
      return Promise.reject(new Error("unknown key derivation"));
    }
    return derive(password, salt, parameters.iterations).then(function (derived) {
      return {
        verifier: derived.verifier,
        open: function (wrappedSecret) {
          var wrapped = ece.fromBase64url(wrappedSecret);
          if (!wrapped || wrapped.length !== WRAPPED_BYTES || wrapped[0] !== VERSION) {
            return Promise.reject(new ece.Damaged("the link's wrapped key is not one of this format's"));
          }
          var head = wrapped.subarray(0, PARAMETERS_BYTES);
          var nonce = wrapped.subarray(PARAMETERS_BYTES, PARAMETERS_BYTES + 12);
          return subtle
            .decrypt({ name: "AES-GCM", iv: nonce, additionalData: head, tagLength: 128 }, derived.key,
              wrapped.subarray(PARAMETERS_BYTES + 12))
            .then(
              function (secret) { return new Uint8Array(secret); },
              function () { throw new ece.Damaged("the password does not open this link's key"); }
            );
        },
      };
    });
  }

  root.microcloudE2EPassword = { ITERATIONS: ITERATIONS, wrap: wrap, unlock: unlock };
})(typeof window !== "undefined" ? window : globalThis);
