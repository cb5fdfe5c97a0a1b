// Run page, GRPO health: dead-group fractions, reward quantiles, turns, tokens and cost per step,
// computed from the run's rollouts on the server (explorer/health.py), drawn with charts.js's panels.
// Hidden for runs without training rollouts; live.js refreshes it when rollouts arrive. With runs
// overlaid, every panel draws each run in its colour (sub-series told apart by dash), toggled from
// the page's run legend like the metric charts.
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
      { title: "model turns per rollout", build: function (h) {
        return [{ label: "model turns", color: "#7048e8", step: h.step, value: h.turns }];
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
      var runs = C.runs();
      return Promise.all(runs.map(function (run, i) {
        var url = i === 0 ? C.cfg().healthUrl : run.healthUrl;
        return url ? C.fetchJson(url) : Promise.resolve(null);
      })).then(function (all) {
        var main = all[0];
        var none = main && !main.step.length && !all.some(function (h) { return h && h.step.length; });
        if (family) family.hidden = !!none;
        if (none) return;
        made.forEach(function (m) {
          var chart = m.panel._chart;
          chart.loaded = true;
          if (!main) { chart.emptyText = "could not load"; C.draw(m.panel); return; }
          var sources = overlaid(m.spec, runs, all);
          // A panel with nothing to draw (no costs, no token counts in these rollouts) is left out.
          var any = sources.some(function (src) {
            return (src.value || src.lo || []).some(function (v) { return v != null; });
          });
          m.panel.hidden = !any;
          if (!any) return;
          chart.sources = sources;
          var legend = m.panel.querySelector(".panel-legend");
          if (legend) legend.remove();
          if (m.spec.build(main).length > 1) addLegend(m.panel, m.spec.build(main), runs.length > 1);
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

  var DASHES = [null, [5, 3], [1, 3], [8, 3, 1, 3]];

  // Every run's series of one health panel: one run keeps the spec's colours; several runs take
  // their run colour, the spec's series told apart by dash (the legend says which is which).
  function overlaid(spec, runs, all) {
    if (runs.length < 2) {
      return spec.build(all[0]).map(function (src) { src.runId = runs[0].id; return src; });
    }
    var out = [];
    runs.forEach(function (run, r) {
      if (!all[r] || !all[r].step.length) return;
      spec.build(all[r]).forEach(function (src, i) {
        if (src.bandOnly) return;  // several runs' quantile bands would pile into one brown block
        src.runId = run.id;
        src.color = run.color;
        src.label = run.name + " " + src.label;
        src.dash = DASHES[i % DASHES.length] || undefined;
        out.push(src);
      });
    });
    return out;
  }

  // One swatch and label per series; a band-only series (a quantile range) gets a band swatch.
  // With several runs the swatches are grey and dashed as drawn (colour is the run's), bands left out.
  function addLegend(panel, sources, byDash) {
    var legend = C.el("div", "panel-legend");
    sources.forEach(function (s, i) {
      if (byDash && s.bandOnly) return;
      var span = C.el("span");
      var sw = C.el("span", "swatch");
      sw.style.background = s.bandOnly ? C.alpha(s.color, s.bandAlpha * 2) : s.color;
      if (byDash && !s.bandOnly) {
        sw.style.background = "none";
        sw.style.borderTop = "2px " + (i === 0 ? "solid" : i === 1 ? "dashed" : "dotted") + " #495057";
      }
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
