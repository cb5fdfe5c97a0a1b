// The run page's chart view in its URL, so a link reproduces it: smoothing (smooth), x axis (x),
// metric filter (filter), hidden runs (hide), per-chart log scale (log) and ignored outliers (clip).
// Overlaid runs are already in `overlay`. replaceState: the view changes no history entry.
"use strict";
(function () {
  function list(params, name) {
    return (params.get(name) || "").split(",").filter(Boolean);
  }

  window.deeprepoChartState = {
    load: function (state) {
      var p = new URLSearchParams(location.search);
      var smooth = parseFloat(p.get("smooth"));
      if (smooth >= 0 && smooth < 1) state.smoothing = smooth;
      if (p.get("x") === "time" || p.get("x") === "defined") state.x = p.get("x");
      state.filter = p.get("filter") || "";
      list(p, "hide").forEach(function (id) { state.hidden[id] = true; });
      state.log = list(p, "log");
      state.clip = list(p, "clip");
    },
    // Per-panel settings read at panel creation (chart-tools.js).
    panel: function (state, chart, key) {
      if (state.log && state.log.indexOf(key) >= 0) chart.log = true;
      if (state.clip && state.clip.indexOf(key) >= 0) chart.clip = true;
    },
    save: function (state, panels) {
      var url = new URL(location.href), p = url.searchParams;
      function put(name, value) { if (value) p.set(name, value); else p.delete(name); }
      put("smooth", state.smoothing ? String(state.smoothing) : "");
      put("x", state.x === "step" ? "" : state.x);
      put("filter", state.filter);
      put("hide", Object.keys(state.hidden).join(","));
      var log = [], clip = [];
      panels.forEach(function (panel) {
        var key = panel.dataset.key || panel.dataset.title;
        if (panel._chart.log) log.push(key);
        if (panel._chart.clip) clip.push(key);
      });
      put("log", log.join(","));
      put("clip", clip.join(","));
      history.replaceState(history.state, "", url.toString());
    },
  };
})();
