// Job page: keep the live log scrolled to its end unless the reader scrolled up; ask before a cancel.
// Launch form: show only the resource fields the chosen cluster's kind reads.
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

(function () {
  // Forms with data-confirm (Cancel job) ask first; the job page's live part is swapped by htmx, so listen on the document.
  document.addEventListener("submit", function (event) {
    var form = event.target;
    if (form.dataset && form.dataset.confirm && !window.confirm(form.dataset.confirm)) event.preventDefault();
  }, true);
})();
(function () {
  function showFor(select, kinds) {
    var kind = kinds[select.value] || "";
    document.querySelectorAll("#launch-resources [data-kinds]").forEach(function (el) {
      el.hidden = el.dataset.kinds.split(" ").indexOf(kind) < 0;
    });
  }
  document.addEventListener("DOMContentLoaded", function () {
    var data = document.getElementById("cluster-kinds");
    var select = document.querySelector(".launch-form select[name=cluster]");
    if (!data || !select) return;
    var kinds = JSON.parse(data.textContent);
    select.addEventListener("change", function () { showFor(select, kinds); });
    showFor(select, kinds);
  });
})();
