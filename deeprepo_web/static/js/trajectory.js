// Trajectory pages: expand long outputs, jump to a #turn-N beyond the loaded pages, keep the
// rollouts form in step with the table, and the compare picker. No inline scripts (CSP).
"use strict";
(function () {
  var jumps = 0;

  function onClick(ev) {
    var btn = ev.target.closest("[data-expand]");
    if (!btn) return;
    var wrap = document.getElementById(btn.getAttribute("data-expand"));
    if (!wrap) return;
    var open = wrap.classList.toggle("expanded");
    if (!btn.hasAttribute("data-label")) btn.setAttribute("data-label", btn.textContent);
    btn.textContent = open ? "collapse" : btn.getAttribute("data-label");
  }

  // A link to #turn-N past the first page: ask the server for the turns up to N, then scroll there.
  function reachAnchor() {
    var m = /^#turn-(\d+)$/.exec(window.location.hash);
    var list = document.getElementById("turns");
    if (!m || !list || !window.htmx) return;
    var el = document.getElementById("turn-" + m[1]);
    if (el) { el.scrollIntoView({block: "start"}); return; }
    var more = list.querySelector(".load-more");
    if (!more || jumps > 20) return;
    jumps += 1;
    var url = list.getAttribute("data-turns-url") + "?from=" + more.getAttribute("data-next-from") + "&upto=" + m[1];
    window.htmx.ajax("GET", url, {target: more, swap: "outerHTML"}).then(reachAnchor);
  }

  function syncSort(root) {
    var table = (root && root.id === "rollout-table") ? root : document.getElementById("rollout-table");
    var input = document.getElementById("rollout-sort");
    if (table && input) input.value = table.getAttribute("data-sort") || "";
  }

  function syncCompare() {
    var form = document.getElementById("compare-form");
    if (!form) return;
    var n = form.querySelectorAll("input[name=r]:checked").length;
    var btn = document.getElementById("compare-btn");
    if (btn) { btn.disabled = n !== 2; btn.textContent = n === 2 ? "Compare side by side" : "Compare side by side (" + n + "/2)"; }
  }

  document.addEventListener("click", onClick);
  document.addEventListener("change", function (ev) { if (ev.target.matches("#compare-form input[name=r]")) syncCompare(); });
  document.addEventListener("DOMContentLoaded", function () { reachAnchor(); syncCompare(); });
  window.addEventListener("hashchange", reachAnchor);
  document.addEventListener("htmx:afterSwap", function (ev) {
    syncSort(ev.target);
    syncCompare();
    // A full body fetched by "load all" replaces the preview: show it unclamped.
    var wrap = ev.target.closest && ev.target.closest(".out-wrap");
    if (wrap) wrap.classList.add("expanded");
  });
})();
