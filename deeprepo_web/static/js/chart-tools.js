// Per-chart tools of the run page (a "⋯" menu on each panel): log scale, a typed y range,
// ignoring outliers (1st–99th percentile), CSV and PNG export of what is drawn, full screen.
// charts.js calls attach() for every panel it makes; the settings live on the panel's chart record.
"use strict";
(function () {
  function el(tag, cls, text) {
    var e = document.createElement(tag);
    if (cls) e.className = cls;
    if (text != null) e.textContent = text;
    return e;
  }

  function check(label, on, change) {
    var l = el("label", "tool-check");
    var box = el("input");
    box.type = "checkbox";
    box.checked = !!on;
    box.addEventListener("change", function () { change(box.checked); });
    l.appendChild(box);
    l.appendChild(document.createTextNode(" " + label));
    return l;
  }

  function fileName(panel, ext) {
    return (panel.dataset.title || "chart").replace(/[^A-Za-z0-9._-]+/g, "_") + "." + ext;
  }

  function download(name, href) {
    var a = el("a");
    a.href = href;
    a.download = name;
    document.body.appendChild(a);
    a.click();
    a.remove();
  }

  function csvCell(v) {
    if (v == null) return "";
    var t = String(v);
    return /[",\n]/.test(t) ? '"' + t.replace(/"/g, '""') + '"' : t;
  }

  // Every point drawn (all runs shown, the zoomed buckets when zoomed), NaN / ±Inf rows included.
  function toCsv(chart) {
    var rows = [["series", "step", "time", "value", "min", "max"]];
    (chart.shown || chart.sources).forEach(function (s) {
      for (var i = 0; i < s.step.length; i++) {
        rows.push([s.label, s.step[i], s.time ? s.time[i] : "", s.value ? s.value[i] : "",
                   s.lo ? s.lo[i] : "", s.hi ? s.hi[i] : ""]);
      }
      (s.nonfinite || []).forEach(function (m) { rows.push([s.label, m[0], "", m[1], "", ""]); });
    });
    return rows.map(function (r) { return r.map(csvCell).join(","); }).join("\n") + "\n";
  }

  function rangeInputs(chart, apply) {
    var wrap = el("div", "tool-range");
    wrap.appendChild(el("span", null, "y from"));
    var lo = el("input"), hi = el("input");
    [lo, hi].forEach(function (inp, i) {
      inp.type = "number";
      inp.step = "any";
      inp.setAttribute("aria-label", i ? "y maximum" : "y minimum");
      var r = chart.userRange;
      if (r && r[i] != null) inp.value = String(r[i]);
      inp.addEventListener("change", function () {
        var a = lo.value === "" ? null : parseFloat(lo.value), b = hi.value === "" ? null : parseFloat(hi.value);
        chart.userRange = a == null && b == null ? null : [a, b];
        apply();
      });
    });
    wrap.appendChild(lo);
    wrap.appendChild(el("span", null, "to"));
    wrap.appendChild(hi);
    return wrap;
  }

  function menu(panel, api) {
    var chart = panel._chart;
    var box = el("div", "tool-menu");
    function apply() { if (chart.plot) { chart.plot.destroy(); chart.plot = null; } if (chart.sources.length) api.draw(panel); api.save(); }
    box.appendChild(check("log scale", chart.log, function (on) { chart.log = on; apply(); }));
    box.appendChild(check("ignore outliers", chart.clip, function (on) { chart.clip = on; apply(); }));
    box.appendChild(rangeInputs(chart, apply));
    var row = el("div", "tool-buttons");
    [["CSV", function () {
      download(fileName(panel, "csv"), URL.createObjectURL(new Blob([toCsv(chart)], { type: "text/csv" })));
    }], ["PNG", function () {
      if (chart.plot) download(fileName(panel, "png"), chart.plot.ctx.canvas.toDataURL("image/png"));
    }], ["Full screen", function () { fullScreen(panel); }]].forEach(function (b) {
      var btn = el("button", "small", b[0]);
      btn.type = "button";
      btn.addEventListener("click", b[1]);
      row.appendChild(btn);
    });
    box.appendChild(row);
    return box;
  }

  function fullScreen(panel) {
    if (document.fullscreenElement) { document.exitFullscreen(); return; }
    if (panel.requestFullscreen) panel.requestFullscreen().catch(function () { panel.classList.toggle("full"); resize(panel); });
    else { panel.classList.toggle("full"); resize(panel); }
  }

  function resize(panel) {
    var plot = panel._chart.plot, box = panel.querySelector(".plot");
    if (plot) plot.setSize({ width: Math.max(200, box.clientWidth), height: box.clientHeight || 190 });
  }

  document.addEventListener("fullscreenchange", function () {
    document.querySelectorAll(".panel").forEach(function (p) {
      p.classList.toggle("full", p === document.fullscreenElement);
      if (p._chart && p._chart.plot) resize(p);
    });
  });

  window.deeprepoChartTools = {
    attach: function (panel, api) {
      var head = panel.querySelector(".panel-head");
      var btn = el("button", "tool-toggle", "⋯");
      btn.type = "button";
      btn.title = "Chart options: log scale, y range, outliers, export, full screen";
      btn.setAttribute("aria-label", "Chart options");
      btn.setAttribute("aria-expanded", "false");
      var box = null;
      btn.addEventListener("click", function () {
        if (box) { box.remove(); box = null; btn.setAttribute("aria-expanded", "false"); return; }
        box = menu(panel, api);
        head.after(box);
        btn.setAttribute("aria-expanded", "true");
      });
      head.appendChild(btn);
    },
    toCsv: toCsv,
  };
})();
