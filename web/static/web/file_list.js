// The dashboard's file list is folded so that the links come first. When an
// upload brings the new list in (upload.js replaces #files inside the fold),
// it unfolds, so the file just sent can be shared at once.
(function () {
  "use strict";
  var fold = document.querySelector("details.file-list");
  if (!fold || !window.MutationObserver) return;
  new MutationObserver(function () { fold.open = true; }).observe(fold, { childList: true });
})();
