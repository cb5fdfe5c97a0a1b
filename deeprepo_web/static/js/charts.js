// Run page charts: one uPlot panel per metric key, loaded lazily from the downsampled series
// endpoint, grouped into families by key prefix; EMA smoothing, x axis: step, wall time or the one
// a metric defined for itself (W&B's define_metric step_metric: "defined", else its step); min/max
// band, several runs overlaid (each toggled from the run legend, coloured by run-colors.js).
// Dragging zooms and re-reads the exact buckets of the visible steps (down to raw points); NaN and
// ±Infinity points break the line and get a marker. GRPO health (health.js), per-chart tools
// (chart-tools.js) and live updates (live.js) use its panels. The view's state is kept in the URL
// (chart-state.js). Data arrives through json_script (#chart-config); no inline scripts (CSP).
"use strict";
(function () {
  var BUCKETS = 800;
  var state = { smoothing: 0, x: "step", filter: "", hidden: {} };
  var panels = [];  // every panel element with a ._chart record
  var cfg, runs;

  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }

  function alpha(hex, a) {
    var n = parseInt(hex.slice(1), 16);
    return "rgba(" + (n >> 16 & 255) + "," + (n >> 8 & 255) + "," + (n & 255) + "," + a + ")";
  }

  // TensorBoard-style EMA with debiasing, so the start of a curve is not pulled towards 0.
  function ema(values, a) {
    if (!a) return values.slice();
    var out = new Array(values.length), last = 0, n = 0;
    for (var i = 0; i < values.length; i++) {
      var v = values[i];
      if (v == null || !isFinite(v)) { out[i] = null; continue; }
      last = last * a + (1 - a) * v;
      n++;
      out[i] = last / (1 - Math.pow(a, n));
    }
    return out;
  }

  function fmt(v) {
    if (v == null || !isFinite(v)) return "—";
    var a = Math.abs(v);
    if (a !== 0 && (a >= 1e6 || a < 1e-3)) return v.toExponential(2);
    return Number(v.toPrecision(4)).toString();
  }

  // ---------------------------------------------------------------- families

  function family(key) {
    // The HF Trainer prefixes every training key with "train/" (TensorBoard, W&B): its reward
    // curves still lead the page.
    if (/^train\/rewards?(\/|_|$)/.test(key)) return "reward";
    var i = key.indexOf("/");
    if (i > 0) return key.slice(0, i);
    if (/^reward/.test(key)) return "reward";
    return "charts";
  }

  var FIRST = ["reward", "reward/mean", "reward_std", "reward/std", "train/reward", "train/reward_std"];
  function keyRank(key) {
    var i = FIRST.indexOf(key);
    return i >= 0 ? i : FIRST.length;
  }

  function familyRank(name) {
    var order = ["reward", "charts", "eval", "loss"];
    var i = order.indexOf(name);
    return i >= 0 ? i : order.length;
  }

  function isHealthKey(key) { return /zero_std|dead_group/.test(key); }

  // ---------------------------------------------------------------- drawing

  function sourceTable(src, xmode) {
    var xs = (xmode === "time" && src.time) ? src.time : (xmode === "defined" && src.xv) ? src.xv : src.step;
    var x = [], v = [], lo = [], hi = [];
    for (var i = 0; i < xs.length; i++) {
      if (xs[i] == null) continue;
      if (x.length && xs[i] <= x[x.length - 1]) continue;  // keep x strictly increasing
      x.push(xs[i]);
      v.push(src.value ? src.value[i] : null);
      lo.push(src.lo ? src.lo[i] : null);
      hi.push(src.hi ? src.hi[i] : null);
    }
    if (xmode === "step" && src.nonfinite && src.nonfinite.length) return withNonfinite({ x: x, v: v, lo: lo, hi: hi }, src.nonfinite);
    return { x: x, v: v, lo: lo, hi: hi };
  }

  // NaN / ±Infinity points become explicit nulls at their steps: the line breaks there.
  function withNonfinite(t, marks) {
    var out = { x: [], v: [], lo: [], hi: [] }, j = 0;
    function mark(step) { out.x.push(step); out.v.push(null); out.lo.push(null); out.hi.push(null); }
    for (var i = 0; i < t.x.length; i++) {
      while (j < marks.length && marks[j][0] < t.x[i]) mark(marks[j++][0]);
      if (j < marks.length && marks[j][0] === t.x[i]) { mark(marks[j++][0]); continue; }
      out.x.push(t.x[i]); out.v.push(t.v[i]); out.lo.push(t.lo[i]); out.hi.push(t.hi[i]);
    }
    while (j < marks.length) mark(marks[j++][0]);
    return out;
  }

  function visibleSources(chart) {
    return chart.sources.filter(function (s) { return !(s.runId && state.hidden[s.runId]); });
  }

  function hasSpread(src) {
    if (!src.lo || !src.hi) return false;
    for (var i = 0; i < src.lo.length; i++) if (src.lo[i] != null && src.hi[i] != null && src.hi[i] - src.lo[i] > 0) return true;
    return false;
  }

  function buildData(chart) {
    var xmode = chart.noTime || (state.x === "defined" && !chart.xKey) ? "step" : state.x;
    var tables = [], series = [{}], bands = [];
    var idx = 1;
    chart.sources.forEach(function (src) { src._main = null; });
    chart.shown = visibleSources(chart);
    chart.shown.forEach(function (src) {
      var t = sourceTable(src, xmode);
      var cols = [t.x];
      var smooth = src.value && src.smooth !== false && !src.bandOnly;
      if (src.value && !src.bandOnly) {
        cols.push(ema(t.v, smooth ? state.smoothing : 0));
        // A line needs two points: a lone one (GRPO health of a run with one step) is drawn as a dot.
        // No spanning: a null is a NaN / ±Inf point and shows as a gap (join's alignment holes are undefined).
        series.push({ label: src.label, stroke: src.color, width: src.width || 1.6, dash: src.dash, spanGaps: false,
                      points: { show: t.x.length < 2, size: 7, fill: src.color } });
        src._main = idx++;
      }
      if (smooth) {
        cols.push(t.v);
        series.push({ label: src.label + " (raw)", stroke: alpha(src.color, state.smoothing ? 0.25 : 0), width: 1, spanGaps: false, points: { show: false } });
        idx++;
      }
      if (src.lo && src.hi && (src.bandOnly || hasSpread(src))) {
        cols.push(t.lo, t.hi);
        // A metric's min / max get faint edges as well as the fill: a one-bucket spike stays visible.
        var edge = src.bandOnly ? "transparent" : alpha(src.color, 0.45);
        series.push({ label: src.label + " min", stroke: edge, width: src.bandOnly ? 0 : 1, spanGaps: false, points: { show: false } });
        series.push({ label: src.label + " max", stroke: edge, width: src.bandOnly ? 0 : 1, spanGaps: false, points: { show: false } });
        bands.push({ series: [idx + 1, idx], fill: alpha(src.color, src.bandAlpha || 0.15) });
        src._lo = idx; src._hi = idx + 1;
        idx += 2;
      }
      tables.push(cols);
    });
    if (!tables.length) tables.push([[], []]), series.push({ label: "", stroke: "transparent" });
    var data = tables.length === 1 ? tables[0] : uPlot.join(tables);
    return { data: data, series: series, bands: bands, time: xmode === "time", defined: xmode === "defined" ? chart.xKey : null };
  }

  function axisStyle() {
    return { stroke: "#6b7385", font: "11px system-ui, sans-serif", grid: { stroke: "#eef0f3", width: 1 }, ticks: { stroke: "#e3e6ec", width: 1, size: 4 } };
  }

  // The y scale a panel's tools ask for: log, a typed range, or the 1st–99th percentile (outliers off).
  function yScale(chart, built) {
    var y = {};
    if (chart.log) y.distr = 3;
    var range = chart.userRange || chart.yRange;
    if (!range && chart.clip) range = clipRange(built.data);
    if (range) {
      y.range = function (u, lo, hi) {
        return [range[0] == null ? lo : range[0], range[1] == null ? hi : range[1]];
      };
    } else if (!chart.log) {
      y.range = window.deeprepoFlatSafeRange;  // a flat line gets a small range, not 0–100 (chart-range.js)
    }
    return y;
  }

  function clipRange(data) {
    var all = [];
    for (var s = 1; s < data.length; s++) data[s].forEach(function (v) { if (v != null && isFinite(v)) all.push(v); });
    if (all.length < 10) return null;
    all.sort(function (a, b) { return a - b; });
    var lo = all[Math.floor(all.length * 0.01)], hi = all[Math.ceil(all.length * 0.99) - 1];
    var pad = (hi - lo) * 0.05 || Math.abs(hi) * 0.05 || 1;
    return [lo - pad, hi + pad];
  }

  function draw(panel) {
    var chart = panel._chart;
    var box = panel.querySelector(".plot");
    box.classList.remove("loading");
    if (!chart.sources.length || !chart.sources.some(function (s) { return s.step.length || (s.nonfinite || []).length; })) {
      if (chart.plot) { chart.plot.destroy(); chart.plot = null; }
      box.textContent = "";
      box.appendChild(el("div", "empty", chart.emptyText || "no points"));
      return;
    }
    var built = buildData(chart);
    var sig = built.series.length + "|" + built.time + "|" + built.defined + "|" + !!chart.log + "|" + JSON.stringify(chart.userRange || null) + "|" + !!chart.clip;
    if (chart.plot && chart.sig === sig && !chart.clip) {
      chart.plot.setData(built.data, !chart.zoom);
      if (chart.zoom) chart.plot.setScale("x", chart.zoom);
    } else {
      if (chart.plot) chart.plot.destroy();
      box.textContent = "";
      chart.plot = makePlot(panel, built, box);
      if (chart.zoom) chart.plot.setScale("x", chart.zoom);
      chart.sig = sig;
    }
    chart.built = built;
    if (panel._numbers) panel._numbers.refresh();
    // What the tests read: the sum of the first drawn line, so smoothing shows up as a change.
    var first = chart.shown[0] && chart.shown[0]._main;
    var sum = 0;
    if (first) built.data[first].forEach(function (v) { if (v != null) sum += v; });
    panel.dataset.drawn = "1";
    panel.dataset.xaxis = built.time ? "time" : built.defined || "step";
    panel.dataset.sum = sum.toFixed(6);
    panel.dataset.runs = String(runIds(chart.shown).length);
    var main = chart.sources[0];
    if (main && main.step.length) panel.dataset.lastStep = String(main.step[main.step.length - 1]);
    if (main && main.resolution) panel.dataset.resolution = String(main.resolution);
  }

  function runIds(sources) {
    var ids = [];
    sources.forEach(function (s) { if (s.runId && ids.indexOf(s.runId) < 0) ids.push(s.runId); });
    return ids;
  }

  function makePlot(panel, built, box) {
    var chart = panel._chart;
    var xa = axisStyle(), ya = axisStyle();
    // Steps are integers: no 0.5 ticks on short runs.
    if (!built.time) xa.incrs = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6, 2e6, 5e6, 1e7];
    if (built.defined) { xa.label = built.defined; xa.labelSize = 16; xa.labelFont = "11px system-ui, sans-serif"; }
    ya.size = 52;
    ya.values = function (u, vals) { return vals.map(fmt); };
    var hover = panel.querySelector(".hover");
    return new uPlot({
      width: Math.max(200, box.clientWidth),
      height: box.clientHeight || 190,
      legend: { show: false },
      // One hover cursor for the whole page: every chart with the same x shows the same step.
      cursor: {
        drag: { x: true, y: false }, points: { size: 5 }, sync: { key: built.time ? "run-time" : built.defined ? "run-x-" + built.defined : "run-step" },
        // Double click goes back to the whole run (the zoomed data alone would reset to itself).
        bind: { dblclick: function () { return function () { zoomReset(panel); return null; }; } },
      },
      scales: { x: { time: built.time }, y: yScale(chart, built) },
      axes: [xa, ya],
      series: built.series,
      bands: built.bands,
      hooks: {
        setCursor: [function (u) { hoverText(panel, u, hover); }],
        setSelect: [function (u) { if (u.select.width > 2) zoomTo(panel, u); }],
        draw: [function (u) { drawMarks(panel, u); }],
      },
    }, built.data, box);
  }

  // Hover text, NaN / ±Inf marks and zoom live in chart-zoom.js; they call back into these.
  var zoom = window.deeprepoChartZoom({
    state: state, fmt: fmt, runIds: runIds, fetchJson: function (u) { return fetchJson(u); },
    seriesUrl: function (r, k, b) { return seriesUrl(r, k, b); },
    loadSources: function (p, extra) { return loadSources(p, extra); },
    draw: function (p) { draw(p); }, loadMetric: function (p) { loadMetric(p); },
  });
  var hoverText = zoom.hoverText, drawMarks = zoom.drawMarks, zoomTo = zoom.zoomTo, zoomReset = zoom.zoomReset;

  // The drawn arrays as rows: x, then each line (the smoothed one and its raw values while smoothing is
  // on; min / max where a band is drawn).
  function numbersOf(panel) {
    var built = panel._chart.built;
    if (!built) return null;
    var labels = built.series.map(function (s) { return s.label; });
    labels[0] = built.time ? "time (UTC)" : built.defined || "step";
    var numbers = window.deeprepoNumbers.fromColumns(panel.dataset.title, labels, built.data, function (s) {
      return state.smoothing > 0 || !/ \(raw\)$/.test(labels[s]);
    });
    if (built.time) numbers.format = [function (t) { return new Date(t * 1000).toISOString().slice(0, 19).replace("T", " "); }];
    return numbers;
  }

  function redrawAll() {
    panels.forEach(function (p) { if (p._chart.sources.length || p._chart.loaded) draw(p); });
  }

  // ---------------------------------------------------------------- panels

  function makePanel(title, chart) {
    var panel = el("div", "panel");
    var head = el("div", "panel-head");
    head.appendChild(el("span", "key", title));
    head.lastChild.title = title;
    head.appendChild(el("span", "hover"));
    panel.appendChild(head);
    panel.appendChild(el("div", "plot loading"));
    // "Show numbers": the table of what the chart draws (chart-numbers.js), read from chart.built.
    if (window.deeprepoNumbers) {
      panel._numbers = window.deeprepoNumbers.toggle(head, panel.lastChild, function () { return numbersOf(panel); }, title);
    }
    chart.sources = chart.sources || [];
    panel._chart = chart;
    panel.dataset.title = title;
    if (window.deeprepoChartState) window.deeprepoChartState.panel(state, chart, title);
    if (window.deeprepoChartTools) window.deeprepoChartTools.attach(panel, { draw: draw, save: saveState });
    panels.push(panel);
    return panel;
  }

  function seriesUrl(runId, key, buckets) {
    return cfg.seriesUrl + encodeURIComponent(runId) + "/series?key=" + encodeURIComponent(key) + "&buckets=" + (buckets || BUCKETS);
  }

  // About one bucket per pixel of plot: the hover reaches every bucket, and no more are read than drawn.
  function bucketsFor(panel) {
    var w = panel.querySelector(".plot").clientWidth - 60;
    return Math.max(100, Math.min(BUCKETS, Math.round(w * (window.devicePixelRatio > 1 ? 1.5 : 1))));
  }

  function fetchJson(url) {
    return window.deeprepo.getJSON(url);  // static/js/poll.js
  }

  // One source per run (the page's run and the overlaid ones) of metric `key`; `extra` narrows the steps.
  function loadSources(panel, extra) {
    var key = panel._chart.key, buckets = bucketsFor(panel);
    return Promise.all(runs.map(function (run) {
      var x = panel._chart.xKey ? "&x=" + encodeURIComponent(panel._chart.xKey) : "";
      return fetchJson(seriesUrl(run.id, key, buckets) + (extra || "") + x).then(function (s) {
        if (!s) return null;
        return { runId: run.id, label: run.name, color: run.color, step: s.step, time: s.time, value: s.value, xv: s.x,
                 lo: s.min, hi: s.max, nonfinite: s.nonfinite || [], resolution: s.resolution };
      });
    })).then(function (sources) { return sources.filter(Boolean); });
  }

  function loadMetric(panel) {
    var chart = panel._chart;
    if (chart.loading) return;
    chart.loading = true;
    chart.stale = false;
    loadSources(panel).then(function (sources) {
      chart.sources = sources;
      chart.base = null;
      chart.zoom = null;
      chart.loaded = true;
      chart.loading = false;
      panel.dataset.loaded = "1";
      draw(panel);
      if (chart.stale) loadMetric(panel);  // points arrived while this was loading
    });
  }

  var observer = new IntersectionObserver(function (entries) {
    entries.forEach(function (e) {
      if (!e.isIntersecting) return;
      observer.unobserve(e.target);
      var load = e.target._load;
      if (load) load(e.target);
    });
  }, { rootMargin: "300px 0px" });

  function metricPanel(key) {
    var panel = makePanel(key, { key: key, xKey: (cfg.xAxes || {})[key] || null });
    panel.dataset.key = key;
    panel._load = loadMetric;
    observer.observe(panel);
    return panel;
  }

  var familyGrids = {};
  var OPEN_CHARTS = 24;

  function familySection(name, count) {
    var det = el("details", "family");
    det.open = true;
    det.dataset.family = name;
    var sum = el("summary", null, name);
    sum.appendChild(el("span", "count", count + " chart" + (count === 1 ? "" : "s")));
    det.appendChild(sum);
    var grid = el("div", "chart-grid");
    det.appendChild(grid);
    familyGrids[name] = grid;
    return det;
  }

  function buildFamilies(root, firstRoot) {
    var groups = {};
    cfg.keys.forEach(function (k) {
      if (isHealthKey(k.key)) return;
      var f = family(k.key);
      (groups[f] = groups[f] || []).push(k.key);
    });
    var names = Object.keys(groups).sort(function (a, b) { return familyRank(a) - familyRank(b) || a.localeCompare(b); });
    if (!names.length) {
      // A finished run whose numbers are all on the scoreboard needs no chart tools.
      var numbers = document.getElementById("scoreboard") || document.getElementById("eval-summary");
      var bar = document.getElementById("chart-toolbar");
      if (numbers && cfg.live && cfg.live.final) { if (bar) bar.hidden = true; }
      else root.appendChild(el("p", "muted", "No metrics logged yet."));
    }
    var shown = 0;
    names.forEach(function (name) {
      var det = familySection(name, groups[name].length);
      // Runs with hundreds of keys: families open in order while they add up to OPEN_CHARTS charts,
      // the rest start folded (a click opens one and its charts load then).
      det.open = name === "reward" || shown < OPEN_CHARTS;
      if (det.open) shown += groups[name].length;
      var grid = familyGrids[name];
      groups[name].sort(function (a, b) { return keyRank(a) - keyRank(b) || a.localeCompare(b); })
        .forEach(function (key) { grid.appendChild(metricPanel(key)); });
      // The reward family leads the page, above GRPO health; the rest follow it.
      (name === "reward" && firstRoot ? firstRoot : root).appendChild(det);
    });
  }

  // ---------------------------------------------------------------- live (used by live.js)

  function panelOf(key) {
    for (var i = 0; i < panels.length; i++) if (panels[i].dataset.key === key) return panels[i];
    return null;
  }

  // A key the page did not have: a new panel in its family (a new family goes after the others).
  function addKey(key) {
    var placeholder = document.querySelector("#charts > p.muted");
    if (placeholder) placeholder.remove();
    var name = isHealthKey(key) ? null : family(key);
    var grid = name ? familyGrids[name] : document.getElementById("health-grid");
    if (!grid) {
      var det = familySection(name, 1);
      var root = name === "reward" ? document.getElementById("charts-first") : document.getElementById("charts");
      root.appendChild(det);
      grid = familyGrids[name];
    }
    var panel = metricPanel(key);
    grid.appendChild(panel);
    var count = grid.parentElement && grid.parentElement.querySelector("summary .count");
    var n = grid.querySelectorAll(".panel").length;
    if (count && name) count.textContent = n + " chart" + (n === 1 ? "" : "s");
    return panel;
  }

  // Append the main run's new points (step > the chart's last step) to every loaded chart.
  var newKeySteps = {};  // steps seen of keys the page has no chart for: one point is not a curve yet

  // `before`: keys that already had one point when the page was made (the scoreboard's).
  function appendPoints(points, truncated, before) {
    Object.keys(points).forEach(function (key) {
      var panel = panelOf(key);
      if (!panel) {
        var seen = newKeySteps[key] = newKeySteps[key] || {};
        if (before && before[key]) seen.before = true;
        points[key].step.forEach(function (x) { seen[x] = true; });
        if (Object.keys(seen).length < 2) return;
        panel = addKey(key);
      }
      var chart = panel._chart;
      if (chart.loading) { chart.stale = true; return; }
      if (!chart.loaded) return;  // not scrolled to yet: it reads the whole series when it is
      if (chart.zoom) { chart.baseStale = true; return; }  // a zoomed chart reloads when zoomed out
      var src = chart.sources.filter(function (x) { return x.runId === cfg.run.id; })[0];
      if (!src || truncated.indexOf(key) >= 0 || src.step.length > 2 * BUCKETS) { loadMetric(panel); return; }
      var p = points[key], last = src.step.length ? src.step[src.step.length - 1] : -Infinity, added = 0;
      for (var i = 0; i < p.step.length; i++) {
        if (p.step[i] <= last) continue;
        src.step.push(p.step[i]);
        src.time.push(p.time[i]);
        src.value.push(p.value[i]);
        src.lo.push(p.value[i]);
        src.hi.push(p.value[i]);
        if (p.value[i] == null) src.nonfinite.push([p.step[i], "NaN/Inf"]);  // a raw live point is null when not finite
        added++;
      }
      if (added) draw(panel);
    });
  }

  window.deeprepoCharts = {
    appendPoints: appendPoints,
    refreshHealth: function () {
      return window.deeprepoHealth ? window.deeprepoHealth.refresh() : Promise.resolve();
    },
    // What health.js draws with.
    parts: { makePanel: makePanel, draw: draw, metricPanel: metricPanel, isHealthKey: isHealthKey,
             observer: observer, alpha: alpha, el: el, fmt: fmt, cfg: function () { return cfg; },
             runs: function () { return runs; }, fetchJson: fetchJson },
  };

  // ---------------------------------------------------------------- toolbar

  // A regular expression (case-insensitive) when the text is one, else a plain substring.
  function matcher(q) {
    if (!q) return function () { return true; };
    try {
      var re = new RegExp(q, "i");
      return function (text) { return re.test(text); };
    } catch (e) {
      var low = q.toLowerCase();
      return function (text) { return text.toLowerCase().indexOf(low) >= 0; };
    }
  }

  function applyFilter() {
    var hit = matcher(state.filter);
    document.querySelectorAll("#charts details.family, #charts-first details.family, #health-family").forEach(function (det) {
      var shown = 0;
      det.querySelectorAll(".panel").forEach(function (p) {
        var ok = hit(p.dataset.key || p.dataset.title || "");
        p.classList.toggle("hidden", !ok);
        if (ok && !p.hidden) shown++;
      });
      det.classList.toggle("hidden", shown === 0);
      if (state.filter && shown) det.open = true;  // a match inside a folded family is shown
    });
  }

  // One toggle per run: hiding a run hides it in every chart of the page (and in the URL).
  function runLegend() {
    var box = document.getElementById("run-legend");
    if (!box || runs.length < 2) return;
    box.textContent = "";
    runs.forEach(function (run) {
      var b = el("button", "run-toggle");
      b.type = "button";
      b.dataset.run = run.id;
      b.setAttribute("aria-pressed", state.hidden[run.id] ? "false" : "true");
      b.title = "Show or hide " + run.name + " in every chart";
      var sw = el("span", "swatch");
      sw.style.background = run.color;
      b.appendChild(sw);
      b.appendChild(document.createTextNode(run.name));
      b.addEventListener("click", function () {
        if (state.hidden[run.id]) delete state.hidden[run.id]; else state.hidden[run.id] = true;
        b.setAttribute("aria-pressed", state.hidden[run.id] ? "false" : "true");
        redrawAll();
        saveState();
      });
      box.appendChild(b);
    });
  }

  function saveState() {
    if (window.deeprepoChartState) window.deeprepoChartState.save(state, panels);
  }

  function init() {
    var src = document.getElementById("chart-config");
    if (!src || typeof uPlot === "undefined") return;
    cfg = JSON.parse(src.textContent);
    var all = [cfg.run].concat(cfg.overlay || []);
    var colors = window.deeprepoRunColors(all.map(function (r) { return r.id; }));
    runs = all.map(function (r, i) { return { id: r.id, name: r.name, color: colors[i], healthUrl: r.healthUrl }; });
    if (window.deeprepoChartState) window.deeprepoChartState.load(state);
    runLegend();
    var health = document.getElementById("health-grid");
    if (health && window.deeprepoHealth) window.deeprepoHealth.build(health, window.deeprepoCharts.parts);
    buildFamilies(document.getElementById("charts"), document.getElementById("charts-first"));

    var slider = document.getElementById("chart-smoothing");
    var out = document.getElementById("chart-smoothing-value");
    var xsel = document.getElementById("chart-x");
    var filter = document.getElementById("chart-filter");
    slider.value = String(state.smoothing);
    out.textContent = state.smoothing.toFixed(2);
    var defined = xsel.querySelector("option[value=defined]");
    if (defined && cfg.xAxes && Object.keys(cfg.xAxes).length) defined.hidden = false;
    else if (state.x === "defined") state.x = "step";
    xsel.value = state.x;
    filter.value = state.filter;
    if (state.filter) applyFilter();
    slider.addEventListener("input", function () {
      state.smoothing = parseFloat(slider.value) || 0;
      out.textContent = state.smoothing.toFixed(2);
      redrawAll();
      saveState();
    });
    xsel.addEventListener("change", function (ev) {
      state.x = ev.target.value;
      redrawAll();
      saveState();
    });
    filter.addEventListener("input", function () { state.filter = filter.value; applyFilter(); saveState(); });
    var add = document.getElementById("overlay-add");
    if (add) add.addEventListener("change", function () {
      if (!add.value) return;
      var ids = runs.slice(1).map(function (r) { return r.id; }).concat([add.value]);
      var url = new URL(location.href);
      url.searchParams.set("overlay", ids.join(","));
      location.href = url.toString();
    });

    var resize = null;
    window.addEventListener("resize", function () {
      clearTimeout(resize);
      resize = setTimeout(function () {
        panels.forEach(function (p) {
          var plot = p._chart.plot;
          if (plot) plot.setSize({ width: Math.max(200, p.querySelector(".plot").clientWidth), height: p.querySelector(".plot").clientHeight || plot.height });
        });
      }, 120);
    });
  }

  document.addEventListener("DOMContentLoaded", init);
})();
