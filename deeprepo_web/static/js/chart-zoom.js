// Run page charts (charts.js): what the cursor shows (a bucket's min / max and the step of its max,
// "NaN at step N"), the NaN / ±Infinity marks, and zoom: a dragged range re-reads the exact buckets
// of those steps from the series API (down to the raw points); a double click goes back.
"use strict";
(function () {
  window.deeprepoChartZoom = function (api) {
    var state = api.state, fmt = api.fmt, runIds = api.runIds;
    var fetchJson = api.fetchJson, seriesUrl = api.seriesUrl, loadSources = api.loadSources;
    var draw = api.draw, loadMetric = api.loadMetric;


    function markAt(src, x) {
      var m = src.nonfinite || [];
      for (var i = 0; i < m.length; i++) if (m[i][0] === x) return m[i][1];
      return null;
    }

    function hoverText(panel, u, hover) {
      var chart = panel._chart, built = chart.built, i = u.cursor.idx;
      if (i == null || !built) { hover.textContent = ""; return; }
      var xv = u.data[0][i];
      var xs = built.time ? new Date(xv * 1000).toLocaleString() : (built.defined || "step") + " " + xv;
      var many = runIds(chart.shown).length > 1 || chart.shown.length > 1;
      var parts = chart.shown.filter(function (s) { return s._main; }).map(function (s) {
        var name = many ? s.label + " " : "";
        var mark = built.time || built.defined ? null : markAt(s, xv);
        if (mark) return name + mark + " at step " + xv;
        var v = u.data[s._main][i];
        if (v === undefined) return null;
        var text = name + fmt(v);
        if (s.resolution > 1 && s._lo && u.data[s._lo][i] != null) {
          text += " (min " + fmt(u.data[s._lo][i]) + " · max " + fmt(u.data[s._hi][i]) + extremeText(panel, s, xv) + ")";
        }
        return text;
      }).filter(function (t) { return t != null; });
      hover.textContent = xs + " · " + parts.join(" · ");
      panel.dataset.hover = hover.textContent;
    }

    // The steps of a bucket's min and max: asked of the server once the cursor rests on it.
    var extremes = {}, extremeTimer = null;
    function extremeText(panel, src, step) {
      var chart = panel._chart;
      if (!chart.key || !chart.built || chart.built.time || chart.built.defined) return "";
      var k = src.step.indexOf(step);
      if (k < 0) return "";
      var start = k > 0 ? src.step[k - 1] + 1 : step - src.resolution + 1, cacheKey = src.runId + "|" + chart.key + "|" + start + "|" + step;
      var got = extremes[cacheKey];
      if (got) return got.max ? " at step " + got.max.step : "";
      clearTimeout(extremeTimer);
      extremeTimer = setTimeout(function () {
        fetchJson(seriesUrl(src.runId, chart.key) + "&extremes=1&start=" + start + "&end=" + step).then(function (res) {
          if (!res) return;
          extremes[cacheKey] = res;
          if (chart.plot && chart.plot.cursor.idx != null) hoverText(panel, chart.plot, panel.querySelector(".hover"));
        });
      }, 150);
      return "";
    }

    var MARK_COLOR = "#e03131";
    function drawMarks(panel, u) {
      var chart = panel._chart;
      if (!chart.built || chart.built.time || chart.built.defined) return;
      var ctx = u.ctx, top = u.bbox.top, bottom = u.bbox.top + u.bbox.height, r = 4 * devicePixelRatio;
      ctx.save();
      chart.shown.forEach(function (s) {
        (s.nonfinite || []).forEach(function (m) {
          if (m[0] < u.scales.x.min || m[0] > u.scales.x.max) return;
          var cx = u.valToPos(m[0], "x", true), atTop = m[1] === "+Inf", cy = atTop ? top + r : bottom - r;
          ctx.fillStyle = m[1] === "NaN" ? MARK_COLOR : s.color;
          ctx.strokeStyle = MARK_COLOR;
          ctx.beginPath();
          ctx.moveTo(cx - r, atTop ? cy - r : cy + r);
          ctx.lineTo(cx + r, atTop ? cy - r : cy + r);
          ctx.lineTo(cx, atTop ? cy + r : cy - r);
          ctx.closePath();
          ctx.fill();
          ctx.stroke();
        });
      });
      ctx.restore();
    }

    // ---------------------------------------------------------------- zoom

    function zoomTo(panel, u) {
      var chart = panel._chart;
      var min = u.posToVal(u.select.left, "x"), max = u.posToVal(u.select.left + u.select.width, "x");
      chart.zoom = { min: min, max: max };
      panel.dataset.zoomed = "1";
      // Health charts, wall time and defined x-axes: uPlot's own zoom of what is drawn.
      if (!chart.key || chart.built.time || chart.built.defined) return;
      var start = Math.floor(min), end = Math.ceil(max);
      if (!chart.base) chart.base = chart.sources;
      chart.zoomSeq = (chart.zoomSeq || 0) + 1;
      var seq = chart.zoomSeq;
      loadSources(panel, "&start=" + start + "&end=" + end).then(function (sources) {
        if (seq !== chart.zoomSeq || !chart.zoom) return;  // a newer zoom or a reset came first
        chart.sources = sources;
        draw(panel);
      });
    }

    function zoomReset(panel) {
      var chart = panel._chart;
      chart.zoom = null;
      chart.zoomSeq = (chart.zoomSeq || 0) + 1;
      delete panel.dataset.zoomed;
      if (chart.base) { chart.sources = chart.base; chart.base = null; }
      if (chart.baseStale) { chart.baseStale = false; loadMetric(panel); return; }
      if (chart.plot) { chart.plot.destroy(); chart.plot = null; }
      draw(panel);
    }

    return { hoverText: hoverText, drawMarks: drawMarks, zoomTo: zoomTo, zoomReset: zoomReset };
  };
})();
