// The one live mechanism: a page follows the server while something runs, through deeprepo.poll.
//
//   deeprepo.getJSON(url)     the JSON read every script makes (session cookie; null on any failure)
//   deeprepo.poll(tick, wait) runs tick() after wait() seconds, again after each tick settles, until a
//                             tick answers false; a hidden tab waits at least HIDDEN_S, and a tab shown
//                             again ticks at once
//   data-live-url + data-live-every="<seconds>" on an element with an id: the element is read again
//                             from data-live-url and replaced (through htmx, so htmx:afterSwap fires),
//                             until the server sends it back without data-live-url (the thing is final)
//
// The run page (live.js) and the runs table (explorer.js) poll JSON with it; job, sweep, import,
// judge and W&B log pages mark the part that changes.
"use strict";
(function () {
  var HIDDEN_S = 10;
  var following = {};  // ids of the marked parts being followed

  function getJSON(url) {
    return fetch(url, { credentials: "same-origin", headers: { Accept: "application/json" } })
      .then(function (r) { return r.ok ? r.json() : null; })
      .catch(function () { return null; });
  }

  function poll(tick, wait) {
    var timer = null, busy = false, stopped = false;
    function run() {
      timer = null;
      busy = true;
      Promise.resolve().then(tick).then(function (more) {
        busy = false;
        if (more === false) stop(); else schedule();
      }, function () { busy = false; schedule(); });
    }
    function schedule() {
      if (stopped || busy || timer) return;
      var seconds = wait();
      if (document.hidden) seconds = Math.max(seconds, HIDDEN_S);
      timer = setTimeout(run, seconds * 1000);
    }
    function shown() {
      if (!document.hidden && timer) { clearTimeout(timer); run(); }
    }
    function stop() {
      stopped = true;
      if (timer) clearTimeout(timer);
      timer = null;
      document.removeEventListener("visibilitychange", shown);
    }
    document.addEventListener("visibilitychange", shown);
    schedule();
    return { stop: stop };
  }

  function follow(id) {
    if (following[id]) return;
    following[id] = true;
    function part() {
      var el = document.getElementById(id);
      return el && el.dataset.liveUrl ? el : null;
    }
    poll(function () {
      var el = part();
      if (!el || !window.htmx) { delete following[id]; return false; }
      // The part is its own source, as an hx-get on it would be: htmx holds back a request while another
      // from the same source is in flight (keeping only the last held), so parts sharing htmx's default
      // source, the body, would crowd each other out on a page with several (the import page's jobs).
      return window.htmx.ajax("GET", el.dataset.liveUrl, { source: el, target: el, swap: "outerHTML" })
        .then(function () {
          if (part()) return true;
          delete following[id];
          return false;
        });
    }, function () {
      var el = part();
      return parseFloat((el && el.dataset.liveEvery) || "2");
    });
  }

  function scan(root) {
    if (!root || !root.querySelectorAll) return;
    if (root.id && root.dataset && root.dataset.liveUrl) follow(root.id);
    root.querySelectorAll("[data-live-url][id]").forEach(function (el) { follow(el.id); });
  }

  window.deeprepo = window.deeprepo || {};
  window.deeprepo.getJSON = getJSON;
  window.deeprepo.poll = poll;
  document.addEventListener("DOMContentLoaded", function () { scan(document); });
  document.addEventListener("htmx:afterSwap", function (ev) { scan(ev.target); });
})();
