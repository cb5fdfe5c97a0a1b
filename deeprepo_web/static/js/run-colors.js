// One colour per run, the same on every page: picked from the run's id (a hash into the palette),
// moved to the next free colour only when two runs of one page would share it (settled in id
// order, so the same runs get the same colours whichever page lists them first).
"use strict";
(function () {
  var PALETTE = ["#3b5bdb", "#e8590c", "#2b8a3e", "#c2255c", "#7048e8", "#1098ad", "#f08c00", "#5c940d", "#862e9c", "#495057"];

  function hash(id) {
    var h = 2166136261;
    for (var i = 0; i < id.length; i++) h = Math.imul(h ^ id.charCodeAt(i), 16777619) >>> 0;
    return h;
  }

  window.deeprepoRunColors = function (ids) {
    var used = {}, chosen = {};
    ids.map(String).slice().sort().forEach(function (id) {
      var c = hash(id) % PALETTE.length;
      for (var k = 0; k < PALETTE.length && used[PALETTE[(c + k) % PALETTE.length]]; k++);
      chosen[id] = PALETTE[(c + k) % PALETTE.length];
      used[chosen[id]] = true;
    });
    return ids.map(function (id) { return chosen[String(id)]; });
  };
})();
