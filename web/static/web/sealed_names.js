// The server renders an encrypted link as "Encrypted file" (it has no
// name), marked data-sealed-share="<id>". In the browser that made the link
// the names, the note and the key are in IndexedDB (web/link_keys.js): put
// them back, on the dashboard's rows (also those live.js adds later) and on
// the share's page, where the link is shown whole, with its #secret. Nothing
// read here is sent anywhere.
(function () {
  "use strict";
  var keys = window.microcloudLinkKeys;
  if (!keys || !window.indexedDB) return;

  function names(record) {
    return record.files.map(function (file) { return file.name; }).join(", ");
  }

  function fill(element, record) {
    element.querySelectorAll("[data-sealed-name]").forEach(function (name) { name.textContent = names(record); });
    element.querySelectorAll("[data-sealed-file]").forEach(function (name) {
      var file = record.files[Number(name.dataset.sealedFile) - 1];
      if (file) name.textContent = file.name;
    });
    element.querySelectorAll("[data-sealed-size]").forEach(function (size) {
      var file = record.files[Number(size.dataset.sealedSize) - 1];
      if (file && window.microcloudUnits) size.textContent = window.microcloudUnits.size(file.size);
    });
    element.querySelectorAll("[data-sealed-message]").forEach(function (message) {
      message.textContent = record.message || message.dataset.noneText;
    });
    // The link shown, opened or copied, with its key; a password-wrapped
    // link goes without it (the password opens it).
    var key = "#" + record.secret;
    element.querySelectorAll("[data-sealed-link]").forEach(function (target) {
      if (record.wrapped) return;
      if (target.tagName === "INPUT") target.value = target.value.split("#")[0] + key;
      else if (target.tagName === "A") target.href = target.href.split("#")[0] + key;
      else target.dataset.copyText = target.dataset.copyText.split("#")[0] + key;
    });
    element.querySelectorAll("[data-sealed-key-note]").forEach(function (note) {
      note.textContent = record.wrapped ? note.dataset.passwordText : note.dataset.foundText;
    });
    element.dataset.sealedShown = "true";
  }

  function show(root) {
    var marked = Array.prototype.slice.call(root.querySelectorAll("[data-sealed-share]"));
    if (root.dataset && root.dataset.sealedShare) marked.push(root);
    marked = marked.filter(function (element) { return !element.dataset.sealedShown; });
    if (!marked.length) return;
    var ids = marked.map(function (element) { return element.dataset.sealedShare; });
    keys.find(ids).then(
      function (found) {
        marked.forEach(function (element) {
          var record = found[element.dataset.sealedShare];
          if (record) fill(element, record);
          else element.dataset.sealedShown = "false"; // its key is in another browser, or gone
        });
      },
      function () { /* no IndexedDB here (a private window may refuse it): the neutral names stay */ }
    );
  }

  show(document);
  // Rows of links made elsewhere, added by the live dashboard.
  new MutationObserver(function (changes) {
    changes.forEach(function (change) {
      change.addedNodes.forEach(function (node) { if (node.nodeType === 1) show(node); });
    });
  }).observe(document.body, { childList: true, subtree: true });
})();
