// The keys of the encrypted links made in this browser, in IndexedDB: per
// share id, the link's secret (as written after its "#"), its files' names,
// types and sizes, and its note. The server never has them; this is how the
// owner's own pages show the real names and the whole link again. Another
// browser, or this one after its site data is cleared, has none.
// window.microcloudLinkKeys: save(record) and find(ids) -> Promise of {id: record}.
(function () {
  "use strict";
  var NAME = "microcloud-link-keys";
  var STORE = "links";
  var opening = null;

  function open() {
    if (!opening) {
      opening = new Promise(function (resolve, reject) {
        var request = window.indexedDB.open(NAME, 1);
        request.onupgradeneeded = function () { request.result.createObjectStore(STORE, { keyPath: "share" }); };
        request.onsuccess = function () { resolve(request.result); };
        request.onerror = function () { reject(request.error); };
      });
    }
    return opening;
  }

  function done(transaction, value) {
    return new Promise(function (resolve, reject) {
      transaction.oncomplete = function () { resolve(value()); };
      transaction.onerror = transaction.onabort = function () { reject(transaction.error); };
    });
  }

  // record: {share: <id>, secret, files: [{name, type, size}], message}
  function save(record) {
    return open().then(function (db) {
      var transaction = db.transaction(STORE, "readwrite");
      transaction.objectStore(STORE).put(record);
      return done(transaction, function () { return record; });
    });
  }

  function find(ids) {
    return open().then(function (db) {
      var transaction = db.transaction(STORE, "readonly");
      var store = transaction.objectStore(STORE);
      var found = {};
      ids.forEach(function (id) {
        var request = store.get(Number(id));
        request.onsuccess = function () { if (request.result) found[id] = request.result; };
      });
      return done(transaction, function () { return found; });
    });
  }

  window.microcloudLinkKeys = { save: save, find: find };
})();
