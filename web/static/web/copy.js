// Copy buttons: <button class="copy" data-copy-text="..."> or
// data-copy-from="<input id>". Hidden without JavaScript (the link itself
// can still be selected or right-clicked); shown here, and in rows added
// later (the live dashboard's) through window.microcloudCopy.wire(root).
(function () {
  "use strict";
  var announcer = document.getElementById("announcer");
  function say(text) { if (announcer) { announcer.textContent = ""; announcer.textContent = text; } }
  function wire(root) {
    root.querySelectorAll("button.copy").forEach(function (button) {
      button.hidden = false;
      button.addEventListener("click", function () {
        var input = button.dataset.copyFrom ? document.getElementById(button.dataset.copyFrom) : null;
        var text = input ? input.value : button.dataset.copyText;
        function copied() {
          button.dataset.state = "copied";
          say(announcer.dataset.copiedText);
          setTimeout(function () { delete button.dataset.state; }, 2000);
        }
        function failed() {
          if (input) input.select(); // the visitor can still press Ctrl+C
          say(announcer.dataset.failedText);
        }
        if (navigator.clipboard && navigator.clipboard.writeText) {
          navigator.clipboard.writeText(text).then(copied, failed);
        } else {
          failed();
        }
      });
    });
  }
  wire(document);
  window.microcloudCopy = { wire: wire };
})();
