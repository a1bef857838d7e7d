// A file as tus-js-client reads it, encrypted on the way (the fileReader
// option): the source's size is the ciphertext's, and slice(start, end)
// seals, from File.slice, only the plaintext records that range touches. So
// a chunk sent again after a failed PATCH, or from the offset the server
// names on a resume, is the very bytes of the first try (each record's
// nonce depends only on its index, the salt only on the file's place in the
// link), and memory holds one chunk and a record, whatever the file's size.
// The same idea as EncryptedFile.read_at in client/microcloud_cli/sealing.py.
// window.microcloudSealedSource.reader(cipher) -> tus fileReader.
(function () {
  "use strict";
  var ece = window.microcloudECE;

  function SealedSource(file, cipher) {
    this.file = file;
    this.cipher = cipher;
    this.size = ece.encryptedSize(file.size);
    this.records = ece.recordsFor(file.size);
  }

  // The record holding ciphertext byte `offset` (the header counts as record 0's).
  SealedSource.prototype.recordAt = function (offset) {
    if (offset < ece.HEADER_BYTES) return 0;
    return Math.min(this.records - 1, Math.floor((offset - ece.HEADER_BYTES) / ece.RECORD_BYTES));
  };

  SealedSource.prototype.slice = function (start, end) {
    var self = this;
    end = Math.min(end, this.size);
    if (start >= end) return Promise.resolve({ value: new Blob([]), done: start >= this.size });
    var first = this.recordAt(start);
    var last = this.recordAt(end - 1);
    var plainEnd = Math.min(this.file.size, (last + 1) * ece.PER_RECORD);
    return this.file
      .slice(first * ece.PER_RECORD, plainEnd)
      .arrayBuffer()
      .then(function (buffer) {
        var plain = new Uint8Array(buffer);
        var sealing = [];
        for (var index = first; index <= last; index += 1) {
          var from = (index - first) * ece.PER_RECORD;
          sealing.push(self.cipher.seal(index, plain.subarray(from, from + ece.PER_RECORD), index === self.records - 1));
        }
        return Promise.all(sealing);
      })
      .then(function (sealed) {
        // Copy the wanted range out of the header and records it spans.
        var out = new Uint8Array(end - start);
        var parts = first === 0 ? [self.cipher.header].concat(sealed) : sealed;
        var at = first === 0 ? 0 : ece.recordOffset(first); // where parts[0] begins in the body
        parts.forEach(function (part) {
          var from = Math.max(start, at);
          var to = Math.min(end, at + part.length);
          if (from < to) out.set(part.subarray(from - at, to - at), from - start);
          at += part.length;
        });
        // A Blob, as tus-js-client's own file source gives: it reads `size`.
        return { value: new Blob([out]), done: end >= self.size };
      });
  };

  SealedSource.prototype.close = function () {};

  function reader(cipher) {
    return {
      openFile: function (file) { return Promise.resolve(new SealedSource(file, cipher)); },
    };
  }

  window.microcloudSealedSource = { reader: reader, SealedSource: SealedSource };
})();
