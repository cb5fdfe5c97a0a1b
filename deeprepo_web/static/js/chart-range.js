/* The y-range rule every uPlot chart shares (run charts, compare's curves). uPlot draws a constant
   series of zeros on a 0–100 axis, which reads as "something near 0 of 100": a flat line gets a
   small range around its value instead; other series keep uPlot's own padded range. */
(function () {
  "use strict";
  window.deeprepoFlatSafeRange = function (u, lo, hi) {
    if (lo == null || hi == null || !isFinite(lo) || !isFinite(hi)) return [lo, hi];
    if (lo === hi) {
      var pad = Math.abs(lo) * 0.1 || 1;
      return [lo - pad, hi + pad];
    }
    return uPlot.rangeNum(lo, hi, 0.1, true);
  };
})();
