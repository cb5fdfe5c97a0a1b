// Charts of the compare, checkpoint and share pages. Data arrives through json_script only.
"use strict";
(function () {
  function readJson(id) {
    var el = document.getElementById(id);
    if (!el) return null;
    try { return JSON.parse(el.textContent); } catch (e) { return null; }
  }

  function cssWidth(el, fallback) {
    // The content box: the card's padding is not ours to draw on.
    if (!el) return fallback;
    var cs = getComputedStyle(el);
    var w = el.clientWidth - parseFloat(cs.paddingLeft || 0) - parseFloat(cs.paddingRight || 0);
    return Math.max(280, Math.floor((w || fallback) - 2));
  }

  // ------------------------------------------------------------ strip chart of rewards per run
  function stripChart(canvas, data) {
    var runs = data.runs || [];
    var W = cssWidth(canvas.parentElement, 560), H = 260;
    var dpr = window.devicePixelRatio || 1;
    canvas.width = W * dpr; canvas.height = H * dpr;
    canvas.style.width = W + "px"; canvas.style.height = H + "px";
    var ctx = canvas.getContext("2d");
    ctx.scale(dpr, dpr);
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, W, H);
    var all = [];
    runs.forEach(function (r) { r.rewards.forEach(function (v) { if (v !== null) all.push(v); }); });
    if (!all.length) { ctx.fillStyle = "#6b7385"; ctx.fillText("No rewards", 20, 30); return; }
    var lo = Math.min.apply(null, all), hi = Math.max.apply(null, all);
    if (lo >= 0 && hi <= 1) { lo = Math.min(lo, Math.floor(lo * 10) / 10); hi = 1; }
    if (hi - lo < 1e-9) { lo -= 0.5; hi += 0.5; }
    var pad = (hi - lo) * 0.06; lo -= pad; hi += pad;
    var left = 48, right = 30, top = 10, bottom = 44;  // right: room for the last run's mean label
    var pw = W - left - right, ph = H - top - bottom;
    function y(v) { return top + ph * (1 - (v - lo) / (hi - lo)); }
    ctx.font = "11px system-ui, sans-serif"; ctx.textAlign = "right"; ctx.textBaseline = "middle";
    var ticks = 5;
    for (var t = 0; t <= ticks; t++) {
      var v = lo + (hi - lo) * t / ticks, yy = Math.round(y(v)) + 0.5;
      ctx.strokeStyle = "#edf0f4"; ctx.beginPath(); ctx.moveTo(left, yy); ctx.lineTo(W - right, yy); ctx.stroke();
      ctx.fillStyle = "#6b7385"; ctx.fillText(v.toFixed(2), left - 6, yy);
    }
    var slot = pw / Math.max(runs.length, 1);
    var labels = [];
    runs.forEach(function (r, i) {
      var cx = left + slot * (i + 0.5);
      // Deterministic jitter: the same data draws the same picture (screenshots, PNG exports).
      var vals = r.rewards.filter(function (v) { return v !== null; });
      var spread = Math.min(slot * 0.28, 40);
      ctx.globalAlpha = vals.length > 400 ? 0.25 : 0.7;
      ctx.fillStyle = r.color;
      vals.forEach(function (v, k) {
        var j = ((k * 0.6180339887) % 1 - 0.5) * 2 * spread;
        ctx.beginPath(); ctx.arc(cx + j, y(v), vals.length > 400 ? 2 : 3.5, 0, Math.PI * 2); ctx.fill();
      });
      ctx.globalAlpha = 1;
      if (r.lo !== null && r.hi !== null) {
        ctx.strokeStyle = "#1d2330"; ctx.lineWidth = 2;
        ctx.beginPath(); ctx.moveTo(cx + spread + 10, y(r.lo)); ctx.lineTo(cx + spread + 10, y(r.hi)); ctx.stroke();
        ctx.beginPath(); ctx.moveTo(cx + spread + 6, y(r.lo)); ctx.lineTo(cx + spread + 14, y(r.lo));
        ctx.moveTo(cx + spread + 6, y(r.hi)); ctx.lineTo(cx + spread + 14, y(r.hi)); ctx.stroke();
      }
      if (r.mean !== null) {
        ctx.strokeStyle = "#1d2330"; ctx.lineWidth = 2.5;
        ctx.beginPath(); ctx.moveTo(cx - spread - 6, y(r.mean)); ctx.lineTo(cx + spread + 14, y(r.mean)); ctx.stroke();
        ctx.fillStyle = "#1d2330"; ctx.textAlign = "left";
        ctx.font = "600 11px system-ui, sans-serif";
        ctx.fillText(r.mean.toFixed(3), cx + spread + 17, y(r.mean));
      }
      ctx.lineWidth = 1;
      // Labels stay inside their run's slot (a few px apart): with many runs or long names they
      // are cut with an ellipsis instead of running into the next run's label.
      var room = slot - 8;
      ctx.textAlign = "center"; ctx.textBaseline = "top"; ctx.fillStyle = r.color;
      ctx.font = "600 12px system-ui, sans-serif";
      var head = fitText(ctx, r.letter + (r.base ? " (baseline)" : ""), room);
      ctx.fillText(head, cx, H - bottom + 8);
      ctx.fillStyle = "#3d4456"; ctx.font = "11px system-ui, sans-serif";
      var name = fitText(ctx, r.name, room);
      ctx.fillText(name, cx, H - bottom + 24);
      var wide = Math.max(measure(ctx, "600 12px system-ui, sans-serif", head), measure(ctx, "11px system-ui, sans-serif", name));
      labels.push([cx - wide / 2, cx + wide / 2]);
      ctx.textBaseline = "middle"; ctx.textAlign = "right";
    });
    canvas.dataset.labels = JSON.stringify(labels);  // what the tests read: the x extent of each label
  }

  function measure(ctx, font, text) {
    ctx.font = font;
    return ctx.measureText(text).width;
  }

  // `text`, cut with an ellipsis to fit `room` pixels in the context's current font.
  function fitText(ctx, text, room) {
    if (ctx.measureText(text).width <= room) return text;
    var lo = 0, hi = text.length;
    while (lo < hi) {
      var mid = Math.ceil((lo + hi) / 2);
      if (ctx.measureText(text.slice(0, mid) + "…").width <= room) lo = mid; else hi = mid - 1;
    }
    return lo ? text.slice(0, lo) + "…" : "";
  }

  // ------------------------------------------------------------ overlaid curves (series API)
  var curvePlot = null;
  function loadCurves(el, data, key) {
    var runs = data.runs || [];
    Promise.all(runs.map(function (r) {
      // Only runs that logged the key are asked (no 404 in the console for the others).
      if (r.keys && r.keys.indexOf(key) < 0) return Promise.resolve(null);
      return window.deeprepo.getJSON("/api/v1/runs/" + encodeURIComponent(r.id) + "/series?buckets=1000&key=" +
                                     encodeURIComponent(key));
    })).then(function (results) { drawCurves(el, runs, results, key); });
  }

  // Steps are whole numbers: ticks at 1, 2, 5, 10, ... never at 2.5.
  var STEP_INCRS = [1, 2, 5, 10, 20, 50, 100, 200, 500, 1e3, 2e3, 5e3, 1e4, 2e4, 5e4, 1e5, 2e5, 5e5, 1e6];

  function drawCurves(el, runs, results, key) {
    var steps = {};
    results.forEach(function (s) { if (s) s.step.forEach(function (x) { steps[x] = true; }); });
    var xs = Object.keys(steps).map(Number).sort(function (a, b) { return a - b; });
    var index = {}; xs.forEach(function (x, i) { index[x] = i; });
    var cols = [xs], series = [{ label: "step" }];
    results.forEach(function (s, i) {
      if (!s) return;
      var col = new Array(xs.length).fill(null);
      s.step.forEach(function (x, k) { col[index[x]] = s.value[k]; });
      cols.push(col);
      series.push({ label: runs[i].letter + " · " + runs[i].name, stroke: runs[i].color, width: 1.6, spanGaps: true });
    });
    if (curvePlot) { curvePlot.destroy(); curvePlot = null; }
    el.textContent = "";
    if (cols.length < 2) {
      numbersOf(el, key, series, [xs]);
      var p = document.createElement("p"); p.className = "muted";
      p.textContent = "No run logged “" + key + "”."; el.appendChild(p); return;
    }
    // A flat line gets a small y-range, not 0–100: the run charts' rule (chart-range.js).
    curvePlot = new uPlot({ width: cssWidth(el, 560), height: 230, series: series,
                            scales: { x: { time: false }, y: { range: window.deeprepoFlatSafeRange } },
                            axes: [{ label: "step", incrs: STEP_INCRS }, {}] }, cols, el);
    el._plot = curvePlot;  // tests read its scales
    el.dataset.drawn = String(cols.length - 1);  // how many runs the chart shows (tests read it)
    numbersOf(el, key, series, cols);
  }

  // ------------------------------------------------------------ checkpoint progression
  function ckptChart(el, d) {
    var band = "rgba(59,91,219,0.15)";
    var opts = {
      width: cssWidth(el, 900), height: 260, scales: { x: { time: false } },
      series: [
        { label: "checkpoint step" },
        { label: "mean reward", stroke: "#3b5bdb", width: 2, points: { size: 7, fill: "#3b5bdb" } },
        { label: "95% CI low", stroke: "rgba(59,91,219,0.5)", dash: [4, 4] },
        { label: "95% CI high", stroke: "rgba(59,91,219,0.5)", dash: [4, 4] },
        { label: "pass rate", stroke: "#2b8a3e", width: 1.5, dash: [2, 3], points: { size: 5, fill: "#2b8a3e" } }
      ],
      bands: [{ series: [3, 2], fill: band }],
      axes: [{ label: "checkpoint step", incrs: STEP_INCRS }, { label: "reward" }]
    };
    var data = [d.steps, d.mean, d.lo, d.hi, d.pass];
    new uPlot(opts, data, el);
    numbersOf(el, "Mean eval reward per checkpoint", opts.series, data);
  }

  function runCurve(el, d) {
    var series = [{ label: "step" }, { label: "reward", stroke: "#3b5bdb", width: 1.6, spanGaps: true },
                  { label: "min", stroke: "rgba(59,91,219,0.3)" }, { label: "max", stroke: "rgba(59,91,219,0.3)" }];
    var data = [d.steps, d.value, d.min, d.max];
    new uPlot({
      width: cssWidth(el, 900), height: 240, scales: { x: { time: false } }, series: series,
      bands: [{ series: [3, 2], fill: "rgba(59,91,219,0.08)" }]
    }, data, el);
    numbersOf(el, "Reward", series, data);
  }

  // "Show numbers" under a chart (chart-numbers.js): the same arrays it was drawn from. One control per
  // chart; a redraw (another metric picked) rewrites it.
  function numbersOf(el, title, series, data) {
    if (!window.deeprepoNumbers) return;
    el._numbers = { title: title, columns: series.map(function (s) { return s.label; }), data: data };
    if (!el._numbersBox) {
      el._numbersBox = window.deeprepoNumbers.attach(el, function () {
        var n = el._numbers;
        return window.deeprepoNumbers.fromColumns(n.title, n.columns, n.data);
      });
    }
    el._numbersBox.refresh();
  }

  // The strip chart's numbers: per run, its rollouts' mean reward, the CI and how many were drawn.
  function stripNumbers(canvas, data) {
    if (!window.deeprepoNumbers) return;
    window.deeprepoNumbers.attach(canvas, function () {
      return {
        title: "Rewards per run",
        columns: ["run", "mean", "95% CI low", "95% CI high", "rewards"],
        rows: (data.runs || []).map(function (r) {
          return [r.letter + " · " + r.name + (r.base ? " (baseline)" : ""), r.mean, r.lo, r.hi,
                  r.rewards.filter(function (v) { return v !== null; }).length];
        }),
      };
    });
  }

  // ------------------------------------------------------------ PNG export of a section's charts
  // Title on top, each chart under its own heading, and a legend of the runs (colour, letter, name):
  // a picture that still says what it shows once it is pasted into a paper or a chat.
  function downloadPng(section, runs) {
    var out = pngOf(section, runs);
    if (!out) return;
    var a = document.createElement("a");
    a.href = out.toDataURL("image/png");
    a.download = (section.id || "chart") + ".png";
    document.body.appendChild(a); a.click(); a.remove();
  }

  function pngOf(section, runs) {
    var canvases = Array.prototype.slice.call(section.querySelectorAll("canvas"));
    if (!canvases.length) return null;
    var dpr = window.devicePixelRatio || 1, gap = 16 * dpr, titleH = 34 * dpr, headH = 22 * dpr, lineH = 22 * dpr;
    var w = 0, h = 0;
    canvases.forEach(function (c) { w += c.width + gap; h = Math.max(h, c.height); });
    var width = Math.max(w + gap, 480 * dpr);
    var out = document.createElement("canvas");
    var ctx = out.getContext("2d");
    // Legend entries flow into as many lines as the width needs.
    var font = 12 * dpr + "px system-ui, sans-serif", lines = [[]], lx = gap;
    ctx.font = font;
    (runs || []).forEach(function (r) {
      var label = fitText(ctx, r.letter + " · " + r.name + (r.base ? " (baseline)" : ""), width - 2 * gap - 19 * dpr);
      var span = 19 * dpr + ctx.measureText(label).width + 18 * dpr;
      if (lx + span > width - gap && lines[lines.length - 1].length) { lines.push([]); lx = gap; }
      lines[lines.length - 1].push({ label: label, color: r.color, x: lx });
      lx += span;
    });
    out.width = width;
    out.height = titleH + headH + h + lines.length * lineH + 2 * gap;
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, out.width, out.height);
    ctx.textBaseline = "middle"; ctx.textAlign = "left";
    ctx.fillStyle = "#1d2330"; ctx.font = "600 " + 15 * dpr + "px system-ui, sans-serif";
    var title = section.getAttribute("data-title") || document.title;
    ctx.fillText(fitText(ctx, title, out.width - 2 * gap), gap, gap + titleH / 2);
    var x = gap;
    canvases.forEach(function (c) {
      var card = c.closest(".chart-card");
      var head = card && card.querySelector(".chart-head");
      ctx.fillStyle = "#3d4456"; ctx.font = "600 " + 12 * dpr + "px system-ui, sans-serif";
      ctx.fillText(fitText(ctx, headText(head), c.width), x, gap + titleH + headH / 2);
      ctx.drawImage(c, x, gap + titleH + headH);
      x += c.width + gap;
    });
    ctx.font = font;
    lines.forEach(function (line, i) {
      var ly = gap + titleH + headH + h + i * lineH + lineH / 2;
      line.forEach(function (e) {
        ctx.fillStyle = e.color; ctx.fillRect(e.x, ly - 5 * dpr, 14 * dpr, 10 * dpr);
        ctx.fillStyle = "#1d2330"; ctx.fillText(e.label, e.x + 19 * dpr, ly);
      });
    });
    return out;
  }
  // A chart's heading as a line of text: a metric menu counts as the metric it shows.
  function headText(head) {
    if (!head) return "";
    var parts = [];
    head.childNodes.forEach(function (n) {
      parts.push(n.tagName === "SELECT" ? n.value : n.textContent);
    });
    return parts.join(" ").replace(/\s+/g, " ").trim();
  }

  window.deeprepoComparePng = pngOf;  // tests render the export without a download

  document.addEventListener("DOMContentLoaded", function () {
    var data = readJson("cmp-data");
    var strip = document.getElementById("strip-chart");
    if (data && strip) { stripChart(strip, data); stripNumbers(strip, data); }
    var curve = document.getElementById("curve-chart");
    var select = document.getElementById("curve-key");
    if (data && curve && select && window.uPlot) {
      loadCurves(curve, data, select.value);
      select.addEventListener("change", function () { loadCurves(curve, data, select.value); });
    } else if (data && curve && data.curves && window.uPlot) {
      drawCurves(curve, data.runs || [], data.curves.runs, data.curves.key);  // a shared page: points came with it
    }
    var ck = readJson("ckpt-data"), ckEl = document.getElementById("ckpt-chart");
    if (ck && ckEl && window.uPlot) ckptChart(ckEl, ck);
    var rc = readJson("run-curve-data"), rcEl = document.getElementById("run-curve");
    if (rc && rcEl && window.uPlot) runCurve(rcEl, rc);
    document.querySelectorAll(".js-png").forEach(function (b) {
      b.addEventListener("click", function () {
        var target = document.getElementById(b.getAttribute("data-target"));
        if (target) downloadPng(target, data && data.runs);
      });
    });
    var url = document.getElementById("share-url");
    if (url) { url.focus(); url.select(); }
  });
})();
