"""The per-step bar charts of the search page and the errors page, drawn here rather than by a template
loop, which formatted and escaped four numbers and a title for each bar: 50 signatures of up to 300 bars
were ~190 ms of the errors page (docs/scale.md, "Many signatures")."""

from __future__ import annotations

from django import template
from django.utils.html import escape
from django.utils.safestring import SafeString, mark_safe

from deeprepo_web.search.chart import HEIGHT, WIDTH, Bar

register = template.Library()


@register.simple_tag
def bar_chart(bars: list[Bar], label: str) -> SafeString:
    """An SVG of the bars, each with its title as a tooltip. Only numbers and escaped text go in."""
    rects = "".join(f'<rect x="{float(b.x)}" y="{float(b.y)}" width="{float(b.w)}" height="{float(b.h)}">'
                    f"<title>{escape(b.title)}</title></rect>" for b in bars)
    return mark_safe(  # noqa: S308 (numbers and escaped text)
        f'<svg class="sc-chart" viewBox="0 0 {WIDTH} {HEIGHT}" preserveAspectRatio="none" role="img" '
        f'aria-label="{escape(label)}">{rects}</svg>')
