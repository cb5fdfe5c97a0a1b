// Run page, GRPO health: dead-group fractions, reward quantiles, turns, tokens and cost per step,
// computed from the run's rollouts on the server (explorer/health.py), drawn with charts.js's panels.
// Hidden for runs without training rollouts; live.js refreshes it when rollouts arrive.
"use strict";
(function () {
  var C;  // charts.js's panel helpers (window.deeprepoCharts.parts)
  var health = { started: false, load: null };

  function healthPanels(grid) {
    var specs = [
      { title: "dead groups (fraction of groups)", yRange: [0, 1], build: function (h) {
        return [
          { label: "all-fail", color: "#c92a2a", step: h.step, value: h.frac_all_fail },
          { label: "all-pass", color: "#2b8a3e", step: h.step, value: h.frac_all_pass },
          { label: "any zero-variance", color: "#868e96", step: h.step, value: h.frac_dead, dash: [4, 3] },
        ];
      } },
      { title: "reward distribution (p10–p90, p25–p75, median, mean)", build: function (h) {
        return [
          { label: "p10–p90", color: "#3b5bdb", step: h.step, lo: h.p10, hi: h.p90, bandOnly: true, bandAlpha: 0.1 },
          { label: "p25–p75", color: "#3b5bdb", step: h.step, lo: h.p25, hi: h.p75, bandOnly: true, bandAlpha: 0.2 },
          { label: "median", color: "#3b5bdb", step: h.step, value: h.p50 },
          { label: "mean", color: "#e8590c", step: h.step, value: h.mean, dash: [4, 3] },
        ];
      } },
      { title: "turns per rollout", build: function (h) {
        return [{ label: "turns", color: "#7048e8", step: h.step, value: h.turns }];
      } },
      { title: "tokens per rollout", build: function (h) {
        return [
          { label: "input", color: "#1098ad", step: h.step, value: h.input_tokens },
          { label: "output", color: "#f08c00", step: h.step, value: h.output_tokens },
        ];
      } },
      { title: "cost per step", optional: "cost", build: function (h) {
        return [{ label: "cost", color: "#5c940d", step: h.step, value: h.cost }];
      } },
    ];
    var made = specs.map(function (spec) {
      var panel = C.makePanel(spec.title, { noTime: true, yRange: spec.yRange, emptyText: "no points yet" });
      panel.dataset.health = spec.optional || spec.title.split(" ")[0];
      grid.appendChild(panel);
      return { panel: panel, spec: spec };
    });
    C.cfg().keys.forEach(function (k) { if (C.isHealthKey(k.key)) grid.appendChild(C.metricPanel(k.key)); });
    var first = made[0].panel;
    var family = document.getElementById("health-family");
    // A run without training rollouts (an eval, a metrics-only run) shows no health section; a
    // live run gets it when its first rollouts with a step arrive (refreshHealth).
    health.load = function () {
      return fetch(C.cfg().healthUrl, { credentials: "same-origin", headers: { Accept: "application/json" } })
        .then(function (r) { return r.ok ? r.json() : null; })
        .catch(function () { return null; })
        .then(function (h) {
          var none = h && !h.step.length;
          if (family) family.hidden = !!none;
          if (none) return;
          made.forEach(function (m) {
            var chart = m.panel._chart;
            chart.loaded = true;
            if (!h) { chart.emptyText = "could not load"; C.draw(m.panel); return; }
            var sources = m.spec.build(h);
            // A panel with nothing to draw (no costs, no token counts in these rollouts) is left out.
            var any = sources.some(function (src) {
              return (src.value || src.lo || []).some(function (v) { return v != null; });
            });
            m.panel.hidden = !any;
            if (!any) return;
            chart.sources = sources;
            if (chart.sources.length > 1 && !m.panel.querySelector(".panel-legend")) addLegend(m.panel, chart.sources);
            C.draw(m.panel);
          });
        });
    };
    if (!C.cfg().health) {
      if (family) family.hidden = true;
      return;
    }
    first._load = function () { if (!health.started) { health.started = true; health.load(); } };
    C.observer.observe(first);
  }

  // One swatch and label per series; a band-only series (a quantile range) gets a band swatch.
  function addLegend(panel, sources) {
    var legend = C.el("div", "panel-legend");
    sources.forEach(function (s) {
      var span = C.el("span");
      var sw = C.el("span", "swatch");
      sw.style.background = s.bandOnly ? C.alpha(s.color, s.bandAlpha * 2) : s.color;
      if (s.bandOnly) sw.style.height = "8px";
      span.appendChild(sw);
      span.appendChild(document.createTextNode(s.label));
      legend.appendChild(span);
    });
    panel.appendChild(legend);
  }

  window.deeprepoHealth = {
    build: function (grid, parts) { C = parts; healthPanels(grid); },
    refresh: function () {
      if (!health.load) return Promise.resolve();
      health.started = true;
      return health.load();
    },
  };
})();
