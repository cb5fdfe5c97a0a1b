// Small progressive enhancements. No inline scripts anywhere: data arrives through json_script.
"use strict";
(function () {
  function prettyJson(root) {
    root.querySelectorAll("[data-json-from]").forEach(function (el) {
      var src = document.getElementById(el.getAttribute("data-json-from"));
      if (!src) return;
      try { el.textContent = JSON.stringify(JSON.parse(src.textContent), null, 2); } catch (e) { el.textContent = src.textContent; }
    });
  }
  document.addEventListener("DOMContentLoaded", function () { prettyJson(document); });
  document.addEventListener("htmx:afterSwap", function (ev) { prettyJson(ev.target); });
})();
