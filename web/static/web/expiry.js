// The expiry fields: a date and time is read in the owner's own time zone,
// which only the browser knows; typing one picks "A date and time".
(function () {
  "use strict";
  var zone = "UTC";
  try { zone = Intl.DateTimeFormat().resolvedOptions().timeZone || "UTC"; } catch (e) { /* keep UTC */ }
  document.querySelectorAll('input[name="time_zone"]').forEach(function (input) { input.value = zone; });
  document.querySelectorAll("[data-local-zone]").forEach(function (el) { el.textContent = zone; });
  document.querySelectorAll('input[name="expires_local"]').forEach(function (input) {
    var custom = input.form && input.form.querySelector('input[name="lifetime"][value="custom"]');
    input.addEventListener("input", function () { if (custom && input.value) custom.checked = true; });
  });
})();
