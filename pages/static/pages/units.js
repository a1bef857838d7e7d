// Sizes in the browser as the server prints them (pages/units.py): the
// same 1024 steps, the same rounding to one decimal, the same words and
// decimal separator, read from the page's #size-words (the server's own
// words for its language). window.microcloudUnits.size(bytes) -> "103.4 KB".
(function () {
  "use strict";
  var block = document.getElementById("size-words");
  var words = block ? JSON.parse(block.textContent) : null;
  var NBSP = "\u00a0"; // the server keeps a number and its unit together

  // Python's round(value, 1), which the server uses: a half goes to the even
  // neighbour (1.25 -> 1.2). Exact here: bytes / 1024^k * 10 is a binary fraction.
  function halfEven(scaled) {
    var floor = Math.floor(scaled);
    var rest = scaled - floor;
    if (rest !== 0.5) return Math.round(scaled);
    return floor % 2 === 0 ? floor : floor + 1;
  }

  function size(bytes) {
    bytes = Math.max(0, Math.floor(Number(bytes) || 0));
    if (!words) return bytes + NBSP + "B"; // no words on this page: still a size
    if (bytes < 1024) return words.bytes[Math.min(bytes, 2)].replace("{n}", String(bytes));
    var step = 0;
    var value = bytes;
    while (value >= 1024 && step < words.steps.length) {
      value /= 1024;
      step += 1;
    }
    var number = (halfEven(value * 10) / 10).toFixed(1).replace(".", words.decimal);
    return words.steps[step - 1].replace("{n}", number);
  }

  window.microcloudUnits = { size: size };
})();
