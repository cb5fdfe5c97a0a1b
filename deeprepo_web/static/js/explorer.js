// Runs explorer: run selection for Compare and Overlay charts, keeping the sort menu in step with header clicks, and
// re-reading the rows of running runs every few seconds (status, duration, reward) until none is left.
"use strict";
(function () {
  var selected = [];

  function updateCompare() {
    var link = document.getElementById("compare-link");
    if (!link) return;
    var count = document.getElementById("compare-count");
    if (count) count.textContent = String(selected.length);
    var ok = selected.length >= 1;
    link.classList.toggle("disabled", !ok);
    link.setAttribute("aria-disabled", ok ? "false" : "true");
    link.href = ok ? link.getAttribute("data-compare-base") + "?runs=" + selected.map(encodeURIComponent).join(",") : "#";
    // Two or more ticked runs: the first one's run page with the others overlaid on every chart.
    var overlay = document.getElementById("overlay-link");
    if (!overlay) return;
    var two = selected.length >= 2;
    overlay.classList.toggle("disabled", !two);
    overlay.setAttribute("aria-disabled", two ? "false" : "true");
    overlay.href = two ? link.getAttribute("data-project-url") + "runs/" + encodeURIComponent(selected[0]) +
      "/?overlay=" + selected.slice(1).map(encodeURIComponent).join(",") : "#";
  }

  function syncTable(root) {
    var table = root.id === "runs-table" ? root : root.querySelector && root.querySelector("#runs-table");
    if (!table) return;
    table.querySelectorAll("input.run-select").forEach(function (box) {
      box.checked = selected.indexOf(box.value) >= 0;
      box.closest("tr").classList.toggle("selected", box.checked);
    });
    var sort = document.getElementById("f-sort");
    var want = table.getAttribute("data-sort");
    if (sort && want && sort.value !== want) {
      if (!Array.prototype.some.call(sort.options, function (o) { return o.value === want; })) {
        var opt = document.createElement("option");
        opt.value = want;
        opt.textContent = want.replace(/^-/, "") + (want.charAt(0) === "-" ? " ↓" : " ↑");
        sort.appendChild(opt);
      }
      sort.value = want;
    }
  }

  document.addEventListener("change", function (ev) {
    var box = ev.target;
    if (!box.classList || !box.classList.contains("run-select")) return;
    var i = selected.indexOf(box.value);
    if (box.checked && i < 0) selected.push(box.value);
    if (!box.checked && i >= 0) selected.splice(i, 1);
    box.closest("tr").classList.toggle("selected", box.checked);
    updateCompare();
  });
  document.addEventListener("click", function (ev) {
    var link = ev.target.closest && ev.target.closest("#compare-link.disabled, #overlay-link.disabled");
    if (link) ev.preventDefault();
  });
  var LIVE_S = 5;
  var live = null;  // the poll (static/js/poll.js) while some row is running

  function runningIds() {
    var ids = [];
    document.querySelectorAll("#runs-table tr[data-run]").forEach(function (tr) {
      if (tr.querySelector(".status-running, .status-queued")) ids.push(tr.getAttribute("data-run"));
    });
    return ids;
  }

  function liveRows() {
    var ids = runningIds();
    var table = document.getElementById("runs-table");
    var base = document.getElementById("compare-link");
    if (!ids.length || !table || !base) { live = null; return false; }
    var url = base.getAttribute("data-project-url") + "rows/?ids=" + ids.map(encodeURIComponent).join(",");
    var label = document.querySelector('#run-filters select[name="label"]');
    if (label && label.value) url += "&label=" + encodeURIComponent(label.value);  // the labels column counts it alone
    return window.deeprepo.getJSON(url).then(function (res) {
      if (!res) return true;
      Object.keys(res.rows).forEach(function (id) {
        var old = document.querySelector('#runs-table tr[data-run="' + CSS.escape(id) + '"]');
        if (!old) return;
        var body = document.createElement("tbody");
        body.innerHTML = res.rows[id];  // rendered and escaped on the server (explorer/rows.py)
        var row = body.querySelector("tr[data-run]");
        if (row) old.replaceWith(row);
      });
      syncTable(document);
      return true;
    });
  }

  function scheduleLive() {
    if (live || !runningIds().length) return;
    live = window.deeprepo.poll(liveRows, function () { return LIVE_S; });
  }

  document.addEventListener("DOMContentLoaded", function () { syncTable(document); updateCompare(); scheduleLive(); });
  document.addEventListener("htmx:afterSwap", function (ev) { syncTable(document); scheduleLive(); });
})();
