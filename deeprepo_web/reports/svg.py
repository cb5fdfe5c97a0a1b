"""Line charts drawn on the server as SVG: they print, they show on share pages and in PDFs, and
they need no script (the CSP allows none inline). Names are escaped; the rest is numbers."""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass
from typing import Literal

from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

W, H = 600, 220  # a chart in a two-column row; a full-width one is WIDE wide at the same height
WIDE = 1000
PAD_L, PAD_R, PAD_T, PAD_B = 52, 12, 10, 26
AXIS_NAME_H = 16  # the extra bottom room of an x-axis with a name under its ticks


@dataclass
class Line:
    name: str
    color: str
    xs: Sequence[float]
    ys: Sequence[float | None]
    dashed: bool = False
    # "line" joins the points; "step" holds each value until the next x (a running best, which
    # only changes when a new point beats it); "dots" marks each point and joins none.
    shape: Literal["line", "step", "dots"] = "line"


def smooth(ys: Sequence[float | None], alpha: float) -> list[float | None]:
    """Exponential moving average (TensorBoard's debiased form); gaps stay gaps."""
    if alpha <= 0:
        return list(ys)
    out: list[float | None] = []
    acc, weight = 0.0, 0.0
    for y in ys:
        if y is None:
            out.append(None)
            continue
        acc = alpha * acc + (1 - alpha) * y
        weight = alpha * weight + (1 - alpha)
        out.append(acc / weight)
    return out


def _ticks(lo: float, hi: float, n: int = 4) -> list[float]:
    if hi <= lo:
        return [lo]
    raw = (hi - lo) / n
    mag = 10 ** math.floor(math.log10(raw))
    step = next(m * mag for m in (1, 2, 2.5, 5, 10) if m * mag >= raw)
    first = math.ceil(lo / step) * step
    return [first + i * step for i in range(n + 2) if first + i * step <= hi + 1e-12]


def _label(v: float) -> str:
    return f"{v:.0f}" if abs(v) >= 100 else f"{v:.3g}"


def line_chart(lines: Sequence[Line], *, title: str = "", wide: bool = False, x_name: str = "step",
               x_label: str = "", y_span: tuple[float, float] | None = None) -> SafeString:
    """`x_label` is written under the x-axis's ticks (its unit, e.g. "minutes since …"); the plot
    gives up that line's height. Without it the axis is unnamed, as for steps, which need no unit.
    `y_span`: the y-axis covers at least this range (shares: 0 to 1, so a flat line at 1 reads as
    "all of them", not as a value between 0.5 and 1.5)."""
    w = WIDE if wide else W
    pad_b = PAD_B + (AXIS_NAME_H if x_label else 0)
    pts = [(x, y) for ln in lines for x, y in zip(ln.xs, ln.ys, strict=False) if y is not None]
    if not pts:
        return mark_safe('<p class="muted">No points to draw.</p>')
    x0, x1 = min(p[0] for p in pts), max(p[0] for p in pts)
    y0, y1 = min(p[1] for p in pts), max(p[1] for p in pts)
    if y_span is not None:
        y0, y1 = min(y0, y_span[0]), max(y1, y_span[1])
    if y1 == y0:
        y0, y1 = y0 - 0.5, y1 + 0.5
    pad = (y1 - y0) * 0.06
    y0, y1 = y0 - pad, y1 + pad
    x1 = x1 if x1 > x0 else x0 + 1

    def sx(x: float) -> float:
        return PAD_L + (x - x0) / (x1 - x0) * (w - PAD_L - PAD_R)

    def sy(y: float) -> float:
        return PAD_T + (y1 - y) / (y1 - y0) * (H - PAD_T - pad_b)

    parts = [f'<svg class="chart" viewBox="0 0 {w} {H}" role="img" aria-label="{escape(title)}">']
    for t in _ticks(y0, y1):
        parts.append(f'<line class="grid" x1="{PAD_L}" x2="{w - PAD_R}" y1="{sy(t):.1f}" y2="{sy(t):.1f}"/>'
                     f'<text class="tick" x="{PAD_L - 6}" y="{sy(t) + 4:.1f}" text-anchor="end">{_label(t)}</text>')
    for t in _ticks(x0, x1, 6):
        parts.append(f'<text class="tick" x="{sx(t):.1f}" y="{H - 8 - (pad_b - PAD_B)}" '
                     f'text-anchor="middle">{_label(t)}</text>')
    if x_label:
        parts.append(f'<text class="axis-name" x="{(PAD_L + w - PAD_R) / 2:.1f}" y="{H - 6}" '
                     f'text-anchor="middle">{escape(x_label)}</text>')
    # Later lines are drawn on top: a chart lists its lines from the back to the front.
    parts.extend(_draw(ln, [(sx(x), sy(y)) if y is not None else None for x, y in zip(ln.xs, ln.ys, strict=False)])
                 for ln in lines)
    parts.append("</svg>")
    parts.append(numbers_table(lines, title=title, x_name=x_name))
    return mark_safe("".join(parts))  # noqa: S308 - numbers, and names through escape()


def _draw(ln: Line, pts: Sequence[tuple[float, float] | None]) -> str:
    """One line in chart coordinates (None: a gap)."""
    color = escape(ln.color)
    if ln.shape == "dots":
        # A white ring keeps a dot visible where it sits on another line.
        dots = "".join(f'<circle cx="{p[0]:.1f}" cy="{p[1]:.1f}" r="3.5"/>' for p in pts if p is not None)
        return (f'<g class="dots" fill="{color}" stroke="#fff" stroke-width="1.2"><title>{escape(ln.name)}</title>'
                f"{dots}</g>")
    d: list[str] = []
    pen = "M"
    for p in pts:
        if p is None:
            pen = "M"
            continue
        if ln.shape == "step" and pen == "L":
            d.append(f"H{p[0]:.1f}")  # the previous value holds until this point's x
        d.append(f"{pen}{p[0]:.1f},{p[1]:.1f}")
        pen = "L"
    dash = ' stroke-dasharray="4 3"' if ln.dashed else ""
    out = (f'<path d="{" ".join(d)}" stroke="{color}" fill="none" stroke-width="1.8"{dash}>'
           f"<title>{escape(ln.name)}</title></path>")
    if len(d) == 1:
        cx, cy = d[0][1:].split(",")
        out += f'<circle cx="{cx}" cy="{cy}" r="3" fill="{color}"/>'
    return out


def numbers_table(lines: Sequence[Line], *, title: str, x_name: str) -> str:
    """The chart's text alternative: a closed "Show numbers" with every drawn point as a table, one row
    per x, one column per line (the same control the script-drawn charts get, static/js/chart-numbers.js)."""
    xs = sorted({x for ln in lines for x in ln.xs})
    at = [dict(zip(ln.xs, ln.ys, strict=False)) for ln in lines]
    head = "".join(f'<th scope="col">{escape(name)}</th>' for name in (x_name, *(ln.name for ln in lines)))
    rows = "".join(
        f'<tr><th scope="row" class="num">{_number(x)}</th>'
        + "".join(f'<td class="num">{_number(values.get(x))}</td>' for values in at) + "</tr>"
        for x in xs
    )
    return (f'<details class="chart-numbers"><summary>Show numbers</summary>'
            f'<div class="numbers-box" tabindex="0" role="region" aria-label="Numbers of {escape(title)}">'
            f'<table class="grid numbers"><caption class="sr-only">{escape(title)}</caption>'
            f"<thead><tr>{head}</tr></thead><tbody>{rows}</tbody></table></div></details>")


def _number(v: float | None) -> str:
    """A value of the numbers table: six significant digits, "—" where a line has no point."""
    return "—" if v is None else f"{v:.6g}"
