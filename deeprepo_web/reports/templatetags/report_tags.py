"""Filters and charts for report panels; everything here reads a panel's stored JSON data."""

from __future__ import annotations

from typing import Any

from django import template
from django.utils.safestring import SafeString

from deeprepo_web.compare.views import PALETTE
from deeprepo_web.reports import svg
from deeprepo_web.reports.panels.evals import raw_summary_text
from deeprepo_web.trajectories.richtext import markdown_html

register = template.Library()


@register.filter
def fnum(v: Any, digits: int = 3) -> str:
    """A stored number with `digits` decimals and thousands separators; "—" for none."""
    return "—" if v is None or v == "" else f"{float(v):,.{int(digits)}f}"


@register.filter
def pct(v: Any) -> str:
    return "—" if v is None else f"{100 * float(v):.0f}%"


@register.filter
def param(params: Any, name: str) -> str:
    v = (params or {}).get(name, "")
    return ", ".join(str(x) for x in v) if isinstance(v, list) else str(v)


@register.filter
def rows(text: str) -> int:
    return max(3, min(30, (text or "").count("\n") + 2))


@register.filter
def report_md(text: str) -> SafeString:
    return markdown_html(text or "")


@register.filter
def raw_text(data: dict[str, Any]) -> str:
    return raw_summary_text(data)


@register.simple_tag
def curve_svg(chart: dict[str, Any], smoothing: Any, n_charts: int = 1) -> SafeString:
    alpha = float(smoothing or 0)
    lines = []
    for ln in chart.get("lines", []):
        xs = [x for x in ln["x"]]
        pairs = [(x, y) for x, y in zip(xs, ln["y"], strict=False) if x is not None]
        ys = svg.smooth([y for _, y in pairs], alpha)
        if alpha > 0:  # the raw curve stays, faint, under the smoothed one
            lines.append(svg.Line(ln["name"] + " (raw)", ln["color"] + "55", [x for x, _ in pairs], [y for _, y in pairs]))
        lines.append(svg.Line(ln["name"], ln["color"], [x for x, _ in pairs], ys))
    return svg.line_chart(lines, title=str(chart.get("key", "")), wide=n_charts == 1)


@register.simple_tag
def health_svg(data: dict[str, Any], which: str) -> SafeString:
    xs = data.get("step", [])
    if which == "dead":
        lines = [svg.Line("all fail", "#c92a2a", xs, data.get("frac_all_fail", [])),
                 svg.Line("all pass", "#2b8a3e", xs, data.get("frac_all_pass", []))]
    else:
        lines = [svg.Line("p10", "#9aa5c4", xs, data.get("p10", []), dashed=True),
                 svg.Line("p90", "#9aa5c4", xs, data.get("p90", []), dashed=True),
                 svg.Line("mean", PALETTE[0], xs, data.get("mean", []))]
    return svg.line_chart(lines, title=which)


@register.simple_tag
def checkpoints_svg(data: dict[str, Any]) -> SafeString:
    pts = data.get("points", [])
    xs = [p["step"] for p in pts]
    return svg.line_chart([
        svg.Line("95% CI low", "#9aa5c4", xs, [p["lo"] for p in pts], dashed=True),
        svg.Line("95% CI high", "#9aa5c4", xs, [p["hi"] for p in pts], dashed=True),
        svg.Line("mean reward", PALETTE[0], xs, [p["mean"] for p in pts]),
    ], title="checkpoint evals", wide=True)


@register.simple_tag
def search_svg(data: dict[str, Any]) -> SafeString:
    return svg.line_chart([svg.Line(r["run"], PALETTE[i % len(PALETTE)], r["steps"], r["share"])
                           for i, r in enumerate(data.get("runs", []))], title="share of rollouts matching", wide=True,
                          y_span=(0.0, 1.0))


@register.filter
def version_note(note: str) -> str:
    """A version's note for people: the block id that groups autosaves is left out."""
    return "edited a text block" if note.startswith("edited text ") else note
