// The ended page's moments in the reader's own time zone (timeleft.js);
// without JavaScript they stay in UTC, as the server wrote them.
(function () {
  "use strict";
  window.microcloudTime.showLocalTimes(document);
})();
