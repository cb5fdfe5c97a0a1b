// "Show numbers" under a chart: the numbers it plots, as a table, for a screen reader or for reading
// an exact value. A <details> (keyboard and screen-reader friendly by itself) or a button in the
// chart's head; the table is written when it opens, and again on every redraw while it stays open,
// from the same arrays the chart draws.
"use strict";
(function () {
  var MAX_ROWS = 1000;  // a chart draws at most ~1000 buckets a line; more rows would be no easier to read

  function cell(tag, text, scope) {
    var c = document.createElement(tag);
    c.textContent = text;
    if (scope) c.scope = scope;
    return c;
  }

  function number(v) {
    if (v == null || v === "") return "—";
    if (typeof v !== "number") return String(v);
    if (!isFinite(v)) return isNaN(v) ? "NaN" : v > 0 ? "+Inf" : "-Inf";
    return String(Number(v.toPrecision(6)));
  }

  // numbers: { title, columns: [names], rows: [[values]], format: [fn or null per column] }
  function fill(box, numbers) {
    box.textContent = "";
    if (!numbers || !numbers.rows.length) {
      box.appendChild(cell("p", "No numbers yet."));
      return;
    }
    var table = document.createElement("table");
    table.className = "grid numbers";
    var caption = cell("caption", numbers.title || "");
    caption.className = "sr-only";
    table.appendChild(caption);
    var head = table.createTHead().insertRow();
    numbers.columns.forEach(function (name) { head.appendChild(cell("th", name, "col")); });
    var body = table.createTBody();
    var format = numbers.format || [];
    numbers.rows.slice(0, MAX_ROWS).forEach(function (row) {
      var tr = body.insertRow();
      row.forEach(function (v, i) {
        var text = format[i] ? format[i](v) : number(v);
        var c = cell(i ? "td" : "th", text, i ? null : "row");
        c.className = "num";
        tr.appendChild(c);
      });
    });
    box.appendChild(table);
    if (numbers.rows.length > MAX_ROWS) {
      box.appendChild(cell("p", "The first " + MAX_ROWS + " of " + numbers.rows.length + " rows."));
    }
  }

  // The box the table is written into, the same for both controls.
  function numbersBox(title) {
    var box = document.createElement("div");
    box.className = "numbers-box";
    box.tabIndex = 0;  // a scrolling box: the keyboard scrolls it once focused
    box.setAttribute("role", "region");
    box.setAttribute("aria-label", "Numbers of " + (title || "the chart"));
    return box;
  }

  // Adds the control after `anchor`; `read()` gives the numbers when asked. Returns the <details>,
  // whose refresh() rewrites an open table.
  function attach(anchor, read) {
    var details = document.createElement("details");
    details.className = "chart-numbers";
    details.appendChild(cell("summary", "Show numbers"));
    var box = numbersBox();
    details.appendChild(box);
    details.refresh = function () { if (details.open) fill(box, read()); };
    details.addEventListener("toggle", details.refresh);
    anchor.after(details);
    return details;
  }

  // The same table behind a "Numbers" button in `head` (the run page's panels, where a closed
  // <details> would add a line to every chart): the button says whether it is open (aria-expanded)
  // and which box it opens (aria-controls); the box comes after `anchor`. Returns the box, whose
  // refresh() rewrites an open table.
  var boxes = 0;
  function toggle(head, anchor, read, title) {
    var box = numbersBox(title);
    box.id = "chart-numbers-" + (++boxes);
    box.hidden = true;
    var button = cell("button", "Show numbers");
    button.type = "button";
    button.className = "numbers-toggle";
    button.setAttribute("aria-expanded", "false");
    button.setAttribute("aria-controls", box.id);
    button.addEventListener("click", function () {
      box.hidden = !box.hidden;
      button.setAttribute("aria-expanded", String(!box.hidden));
      button.textContent = box.hidden ? "Show numbers" : "Hide numbers";
      box.refresh();
    });
    box.refresh = function () { if (!box.hidden) fill(box, read()); };
    head.appendChild(button);
    anchor.after(box);
    return box;
  }

  // uPlot's data (x first, then one array per series) and series labels → rows of the table; series
  // without a label (or left out by `keep`) are skipped.
  function fromColumns(title, labels, data, keep) {
    var used = [0];
    for (var s = 1; s < data.length; s++) if (labels[s] && (!keep || keep(s))) used.push(s);
    var rows = (data[0] || []).map(function (x, i) {
      return used.map(function (s) { return data[s][i]; });
    });
    return { title: title, columns: used.map(function (s) { return labels[s]; }), rows: rows };
  }

  window.deeprepoNumbers = { attach: attach, toggle: toggle, fromColumns: fromColumns };
})();
