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
    var left = 48, right = 12, top = 10, bottom = 44;
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
      ctx.textAlign = "center"; ctx.textBaseline = "top"; ctx.fillStyle = r.color;
      ctx.font = "600 12px system-ui, sans-serif";
      ctx.fillText(r.letter + (r.base ? " (baseline)" : ""), cx, H - bottom + 8);
      ctx.fillStyle = "#3d4456"; ctx.font = "11px system-ui, sans-serif";
      var name = r.name.length > 34 ? r.name.slice(0, 33) + "…" : r.name;
      ctx.fillText(name, cx, H - bottom + 24);
      ctx.textBaseline = "middle"; ctx.textAlign = "right";
    });
  }

  // ------------------------------------------------------------ overlaid curves (series API)
  var curvePlot = null;
  function loadCurves(el, data, key) {
    var runs = data.runs || [];
    Promise.all(runs.map(function (r) {
      return fetch("/api/v1/runs/" + encodeURIComponent(r.id) + "/series?buckets=1000&key=" + encodeURIComponent(key),
                   { credentials: "same-origin" })
        .then(function (res) { return res.ok ? res.json() : null; })
        .catch(function () { return null; });
    })).then(function (results) {
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
        var p = document.createElement("p"); p.className = "muted";
        p.textContent = "No run logged “" + key + "”."; el.appendChild(p); return;
      }
      curvePlot = new uPlot({ width: cssWidth(el, 560), height: 230, series: series, scales: { x: { time: false } },
                              axes: [{ label: "step" }, {}] }, cols, el);
    });
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
      axes: [{ label: "checkpoint step" }, { label: "reward" }]
    };
    new uPlot(opts, [d.steps, d.mean, d.lo, d.hi, d.pass], el);
  }

  function runCurve(el, d) {
    new uPlot({
      width: cssWidth(el, 900), height: 240, scales: { x: { time: false } },
      series: [{ label: "step" }, { label: "reward", stroke: "#3b5bdb", width: 1.6, spanGaps: true },
               { label: "min", stroke: "rgba(59,91,219,0.3)" }, { label: "max", stroke: "rgba(59,91,219,0.3)" }],
      bands: [{ series: [3, 2], fill: "rgba(59,91,219,0.08)" }]
    }, [d.steps, d.value, d.min, d.max], el);
  }

  // ------------------------------------------------------------ PNG export of every canvas in a section
  function downloadPng(section) {
    var canvases = Array.prototype.slice.call(section.querySelectorAll("canvas"));
    if (!canvases.length) return;
    var gap = 16, w = 0, h = 0;
    canvases.forEach(function (c) { w += c.width + gap; h = Math.max(h, c.height); });
    var out = document.createElement("canvas");
    out.width = w + gap; out.height = h + 2 * gap;
    var ctx = out.getContext("2d");
    ctx.fillStyle = "#fff"; ctx.fillRect(0, 0, out.width, out.height);
    var x = gap;
    canvases.forEach(function (c) { ctx.drawImage(c, x, gap); x += c.width + gap; });
    var a = document.createElement("a");
    a.href = out.toDataURL("image/png");
    a.download = (section.id || "chart") + ".png";
    document.body.appendChild(a); a.click(); a.remove();
  }

  document.addEventListener("DOMContentLoaded", function () {
    var data = readJson("cmp-data");
    var strip = document.getElementById("strip-chart");
    if (data && strip) stripChart(strip, data);
    var curve = document.getElementById("curve-chart");
    var select = document.getElementById("curve-key");
    if (data && curve && select && window.uPlot) {
      loadCurves(curve, data, select.value);
      select.addEventListener("change", function () { loadCurves(curve, data, select.value); });
    }
    var ck = readJson("ckpt-data"), ckEl = document.getElementById("ckpt-chart");
    if (ck && ckEl && window.uPlot) ckptChart(ckEl, ck);
    var rc = readJson("run-curve-data"), rcEl = document.getElementById("run-curve");
    if (rc && rcEl && window.uPlot) runCurve(rcEl, rc);
    document.querySelectorAll(".js-png").forEach(function (b) {
      b.addEventListener("click", function () {
        var target = document.getElementById(b.getAttribute("data-target"));
        if (target) downloadPng(target);
      });
    });
    var url = document.getElementById("share-url");
    if (url) { url.focus(); url.select(); }
  });
})();
