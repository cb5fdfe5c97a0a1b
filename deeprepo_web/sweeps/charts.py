"""The sweep page's two charts, drawn on the server as SVG (no script; the CSP allows none inline).

Parallel coordinates: one vertical axis per swept parameter and one for the metric, a line per
trial that has a value, coloured from worst (light) to best (dark). Best so far: the best value
among trials finished up to each trial's end, over wall time, as a step line, with every trial's
value as a dot on top.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from typing import Any

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from deeprepo_web.reports.svg import Line, line_chart
from deeprepo_web.sweeps.models import Sweep, Trial, TrialStatus

W, H = 1000, 276
# The axes' end labels sit above and below the axes, clear of the lines (which all end on an axis);
# the bottom padding holds the low label and the axis's name under it.
PAD_X, PAD_T, PAD_B = 70, 26, 46


def _label(v: Any) -> str:
    if isinstance(v, float):
        return f"{v:.3g}"
    return str(v)


def _axis(sweep: Sweep, name: str, values: list[Any]) -> tuple[Any, list[tuple[float, str]]]:
    """A function value → 0..1 (bottom..top) for one axis, and its tick labels."""
    entry = sweep.space.get(name, {})
    if "values" in entry or any(isinstance(v, str | bool) for v in values):
        cats = list(entry.get("values") or dict.fromkeys(values))
        n = max(1, len(cats) - 1)
        return (lambda v: cats.index(v) / n if v in cats else 0.5), [(i / n, _label(c)) for i, c in enumerate(cats)]
    nums = [float(v) for v in values if isinstance(v, int | float) and math.isfinite(v)]
    lo = float(entry.get("low", min(nums, default=0.0)))
    hi = float(entry.get("high", max(nums, default=1.0)))
    log = bool(entry.get("log")) and lo > 0
    if log:
        lo, hi = math.log10(lo), math.log10(hi)
    if hi <= lo:
        lo, hi = lo - 0.5, hi + 0.5

    def pos(v: Any) -> float:
        x = math.log10(v) if log and v > 0 else float(v)
        return (x - lo) / (hi - lo)

    ticks = [(0.0, _label(10**lo if log else lo)), (1.0, _label(10**hi if log else hi))]
    return pos, ticks


def _axis_marks(labels: list[str], ticks: list[list[tuple[float, str]]], step: float,
                y: Callable[[float], float]) -> tuple[list[str], list[str]]:
    """Each axis with its name and end labels, and apart the labels inside an axis (categories),
    which the caller draws over the lines."""
    marks: list[str] = []
    inner: list[str] = []
    for i, (label, axis_ticks) in enumerate(zip(labels, ticks, strict=True)):
        x = PAD_X + i * step
        marks.append(f'<line class="axis" x1="{x:.1f}" x2="{x:.1f}" y1="{PAD_T}" y2="{H - PAD_B}"/>'
                     f'<text class="axis-name" x="{x:.1f}" y="{H - 8}" text-anchor="middle">{escape(label)}</text>')
        for frac, text in axis_ticks:
            if frac >= 1.0 or frac <= 0.0:
                ty = PAD_T - 8 if frac >= 1.0 else H - PAD_B + 15
                marks.append(f'<text class="tick" x="{x:.1f}" y="{ty}" text-anchor="middle">{escape(text)}</text>')
            else:
                # Lines meet at a category's point from both sides, except beside the last axis.
                side = (x + 6, "start") if i == len(labels) - 1 else (x - 6, "end")
                inner.append(f'<text class="tick inner" x="{side[0]:.1f}" y="{y(frac) + 4:.1f}" '
                             f'text-anchor="{side[1]}">{escape(text)}</text>')
    return marks, inner


def parallel_coordinates(sweep: Sweep, trials: list[Trial]) -> SafeString:
    shown = [t for t in trials if t.value is not None or (t.status == TrialStatus.PRUNED and t.intermediate)]
    names = list(sweep.space)
    if not shown or not names:
        return mark_safe('<p class="muted">Lines appear as trials finish.</p>')

    def metric_of(t: Trial) -> float:
        if t.value is not None:
            return t.value
        return float(t.intermediate[str(t.last_step)]) if str(t.last_step) in t.intermediate else math.nan

    metric_values = [metric_of(t) for t in shown]
    axes = [_axis(sweep, n, [t.params.get(n) for t in shown]) for n in names]
    axes.append(_axis(sweep, "", [v for v in metric_values if math.isfinite(v)]))
    labels = [*names, sweep.metric]
    step = (W - 2 * PAD_X) / max(1, len(labels) - 1)

    def y(frac: float) -> float:
        return PAD_T + (1 - min(1.0, max(0.0, frac))) * (H - PAD_T - PAD_B)

    finite = sorted(v for v in metric_values if math.isfinite(v))
    parts = [f'<svg class="chart parcoords" viewBox="0 0 {W} {H}" role="img" aria-label="parameters against '
             f'{escape(sweep.metric)}">']
    axis_marks, inner = _axis_marks(labels, [ticks for _, ticks in axes], step, y)
    parts.extend(axis_marks)
    for t, value in zip(shown, metric_values, strict=True):
        if not math.isfinite(value):
            continue
        rank = finite.index(value) / max(1, len(finite) - 1)
        if sweep.direction == "minimize":
            rank = 1 - rank
        points = [(PAD_X + i * step, y(pos(t.params.get(n)))) for i, (n, (pos, _)) in enumerate(zip(names, axes,
                                                                                                    strict=False))]
        points.append((PAD_X + len(names) * step, y(axes[-1][0](value))))
        d = " ".join(f"{'M' if j == 0 else 'L'}{px:.1f},{py:.1f}" for j, (px, py) in enumerate(points))
        shade = int(210 - 170 * rank)
        dash = ' stroke-dasharray="4 3"' if t.status == TrialStatus.PRUNED else ""
        parts.append(f'<path class="trial-line" d="{d}" stroke="rgb({shade},{shade + 20},{min(255, shade + 90)})" '
                     f'fill="none" stroke-width="1.8"{dash}><title>trial {t.number} ({escape(t.status)}): '
                     f'{escape(sweep.metric)} {value:.4g}</title></path>')
    parts.extend(inner)
    parts.append("</svg>")
    parts.append(_trial_numbers(shown, names, metric_values, sweep.metric))
    return mark_safe("".join(parts))  # noqa: S308 - numbers, and names through escape()


def _trial_numbers(trials: list[Trial], names: list[str], values: list[float], metric: str) -> str:
    """The parallel coordinates' "Show numbers": one row per drawn trial, its parameters and metric."""
    head = "".join(f'<th scope="col">{escape(n)}</th>' for n in ("trial", *names, metric))
    rows = "".join(
        f'<tr><th scope="row" class="num">{t.number}</th>'
        + "".join(f"<td>{escape(_label(t.params.get(n)))}</td>" for n in names)
        + f'<td class="num">{value:.6g}</td></tr>'
        for t, value in zip(trials, values, strict=True)
    )
    return ('<details class="chart-numbers"><summary>Show numbers</summary>'
            f'<div class="numbers-box" tabindex="0" role="region" aria-label="Numbers of the parameters against '
            f'{escape(metric)}"><table class="grid numbers"><thead><tr>{head}</tr></thead><tbody>{rows}</tbody>'
            "</table></div></details>")


def best_so_far(sweep: Sweep, trials: list[Trial]) -> SafeString:
    done = sorted((t for t in trials if t.value is not None and t.finished_at is not None),
                  key=lambda t: t.finished_at)  # type: ignore[arg-type, return-value]
    if not done:
        return mark_safe('<p class="muted">The curve starts when the first trial completes.</p>')
    start = min(t.created_at for t in trials)
    xs = [(t.finished_at - start).total_seconds() / 60 for t in done]  # type: ignore[operator]
    values = [float(t.value) for t in done]  # type: ignore[arg-type]
    pick = max if sweep.direction == "maximize" else min
    best: list[float | None] = []
    for v in values:
        best.append(v if not best else pick(v, best[-1]))  # type: ignore[type-var]
    # The best holds until a trial beats it (a step), and each trial is a dot drawn on top: when every
    # trial is a new best, a line through the trials would lie exactly under the best line, unseen.
    lines = [Line(f"best {sweep.metric} so far", "#2563eb", xs, best, shape="step"),
             Line(f"{sweep.metric} of each trial", "#6b7280", xs, list(values), shape="dots")]
    return line_chart(lines, title=f"best {sweep.metric} so far (minutes since the sweep started)", wide=True,
                      x_name="minutes", x_label="minutes since the sweep started")
