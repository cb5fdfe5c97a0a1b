// Job page: keep the live log scrolled to its end unless the reader scrolled up.
"use strict";
(function () {
  var pinned = true;
  function pin(root) {
    var log = (root || document).querySelector ? document.getElementById("job-log") : null;
    if (log && pinned) log.scrollTop = log.scrollHeight;
  }
  document.addEventListener("DOMContentLoaded", function () { pin(document); });
  document.addEventListener("htmx:beforeSwap", function () {
    var log = document.getElementById("job-log");
    if (log) pinned = log.scrollTop + log.clientHeight >= log.scrollHeight - 20;
  });
  document.addEventListener("htmx:afterSwap", function () { pin(document); });
})();
