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
  // Links inside a region that htmx swaps (sort headers, pagers) load through a stable element
  // outside it (data-load-via="#id", which holds hx-target, hx-sync, hx-swap, hx-push-url). A click
  // while the region is loading then waits in the queue; issued by the link itself, it was dropped
  // once the pending swap removed the link.
  function loadVia(ev) {
    var link = ev.target.closest && ev.target.closest("a[data-load-via]");
    if (!link || !window.htmx || ev.defaultPrevented || ev.button !== 0 || ev.metaKey || ev.ctrlKey ||
        ev.shiftKey || ev.altKey) return;
    var via = document.querySelector(link.getAttribute("data-load-via"));
    if (!via) return;
    ev.preventDefault();
    window.htmx.ajax("GET", link.getAttribute("href"), {source: via});
  }
  document.addEventListener("click", loadVia);
  // A "Copy" button (data-copy="#input") puts the input's value on the clipboard and says so; where
  // the clipboard API is refused (plain http on another host), the text is selected for Ctrl+C.
  function copyField(ev) {
    var button = ev.target.closest && ev.target.closest("button[data-copy]");
    if (!button) return;
    var field = document.querySelector(button.getAttribute("data-copy"));
    if (!field) return;
    var label = button.textContent;
    function said(text) {
      button.textContent = text;
      window.setTimeout(function () { button.textContent = label; }, 2000);
    }
    field.focus();
    field.select();
    if (navigator.clipboard && window.isSecureContext) {
      navigator.clipboard.writeText(field.value).then(function () { said("Copied"); },
        function () { said("Press Ctrl+C to copy"); });
    } else {
      said(document.execCommand && document.execCommand("copy") ? "Copied" : "Press Ctrl+C to copy");
    }
  }
  document.addEventListener("click", copyField);
  document.addEventListener("DOMContentLoaded", function () { prettyJson(document); });
  document.addEventListener("htmx:afterSwap", function (ev) { prettyJson(ev.target); });
})();
