// Run page, live: while the run is not final, poll its live state (explorer/live.py) and, only when
// it moved, fetch the points after the last step the page has (series?after=) and GRPO health.
// Quick polls while points keep arriving, slow ones once the run has gone quiet; none once final.
"use strict";
(function () {
  var QUIET_MS = 30000;  // no new data seen for this long: the page is idle and polls slowly
  var HEALTH_MS = 10000;  // GRPO health reads every rollout of the run: at most this often
  var cfg, state, after, lastChange = 0, lastHealth = 0, healthDue = false;

  function getJSON(url) { return window.deeprepo.getJSON(url); }  // static/js/poll.js

  function swapHeader(html) {
    var old = document.getElementById("run-status");
    if (!old || !html || old.outerHTML === html) return;
    var box = document.createElement("div");
    box.innerHTML = html;  // server-rendered and escaped (explorer/run.html#status)
    var head = box.firstElementChild;
    if (!head) return;
    old.replaceWith(head);
    // the Run card's "Finished" sits outside the header: it follows the header's data-finished
    var finished = document.getElementById("run-finished");
    if (finished && head.dataset.finished) finished.textContent = head.dataset.finished;
  }

  // Scoreboard tiles (metrics that had one point) follow their newest value; a key with a second
  // step becomes a chart, and its tile goes.
  function updateScoreboard(points) {
    var before = {}, fmt = window.deeprepoCharts.parts.fmt;
    Object.keys(points).forEach(function (key) {
      var tile = document.querySelector('#scoreboard .score[data-key="' + CSS.escape(key) + '"]');
      var p = points[key];
      if (!tile || !p.step.length) return;
      before[key] = true;
      var value = tile.querySelector(".value");
      if (value) value.textContent = fmt(p.value[p.value.length - 1]);
      tile.dataset.pending = "1";
    });
    return before;
  }

  function dropChartedTiles() {
    document.querySelectorAll("#scoreboard .score[data-pending]").forEach(function (tile) {
      if (document.querySelector('.panel[data-key="' + CSS.escape(tile.dataset.key) + '"]')) tile.remove();
      else delete tile.dataset.pending;
    });
    var board = document.getElementById("scoreboard");
    if (board && !board.querySelector(".score")) board.hidden = true;
  }

  function fetchPoints(upTo) {
    // From the newest step the page has, inclusive: trainers log eval or timing keys in a second
    // call at the same step; the charts skip what they already have.
    var url = cfg.seriesUrl + encodeURIComponent(cfg.run.id) + "/series?after=" + encodeURIComponent(after - 1);
    return getJSON(url).then(function (res) {
      if (!res) return;
      var before = updateScoreboard(res.points);
      window.deeprepoCharts.appendPoints(res.points, res.truncated || [], before);
      dropChartedTiles();
      after = upTo;
    });
  }

  function maybeHealth(now) {
    if (!healthDue || now - lastHealth < HEALTH_MS) return null;
    healthDue = false;
    lastHealth = now;
    return window.deeprepoCharts.refreshHealth();
  }

  // Seconds to the next look (deeprepo.poll, static/js/poll.js; a hidden tab waits longer there).
  function wait() {
    var poll = cfg.poll || { active: 2, idle: 5 };
    var quiet = !state.active && Date.now() - lastChange > QUIET_MS;
    return quiet ? poll.idle : poll.active;
  }

  function tick() {
    return getJSON(cfg.liveUrl).then(function (s) {
      if (!s) return true;
      cfg.poll = s.poll;
      swapHeader(s.header);
      var now = Date.now(), work = [];
      if (s.last_step != null && (s.last_step > after || s.keys !== state.keys || s.points !== state.points)) {
        lastChange = now;
        work.push(fetchPoints(s.last_step));
      }
      if (s.rollout !== state.rollout) { lastChange = now; healthDue = true; }
      // The last look at a run that just ended reads its health whatever the throttle says.
      if (s.final && healthDue) lastHealth = 0;
      work.push(maybeHealth(now));
      state = s;
      return Promise.all(work).then(function () {
        if (!s.final) return true;
        document.body.dataset.live = "stopped";
        return false;
      });
    });
  }

  function init() {
    var src = document.getElementById("chart-config");
    if (!src || !window.deeprepoCharts) return;
    cfg = JSON.parse(src.textContent);
    state = cfg.live;
    if (!cfg.liveUrl || !state || state.final) return;
    after = state.last_step == null ? 0 : state.last_step;
    document.body.dataset.live = "polling";
    window.deeprepo.poll(tick, wait);
  }

  document.addEventListener("DOMContentLoaded", init);
})();
