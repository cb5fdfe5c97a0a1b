"""The runs explorer's table rows, written in Python, and its reward sparklines.

Table rows are the hottest renders of the product (every visit, 50 rows of 12 cells). As templates they
cost ~45 template nodes a row, ~0.4 ms, most of each page's time; format_html escapes every value
exactly as the template engine does, at a fraction of the cost.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from urllib.parse import urlencode

from django.contrib.humanize.templatetags.humanize import naturaltime
from django.utils import timezone
from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString
from django.utils.text import Truncator

from deeprepo_web.explorer.columns import TABLE, config_value
from deeprepo_web.explorer.selectors import RunReward
from deeprepo_web.explorer.templatetags import explorer_format
from deeprepo_web.front.badges import run_badge
from deeprepo_web.labels.selectors import RunLabelCount
from deeprepo_web.labels.templatetags.label_tags import text_colour
from deeprepo_web.runs.models import Run

SPARK_W, SPARK_H = 120, 22


def sparkline_points(values: list[float], width: int = SPARK_W, height: int = SPARK_H) -> str:
    """Polyline coordinates of `values` scaled into a width x height box (1 px margin)."""
    finite = [v for v in values if math.isfinite(v)]
    if not finite:
        return ""
    if len(finite) == 1:
        finite = finite * 2
    lo, hi = min(finite), max(finite)
    span = hi - lo or 1.0
    n = len(finite) - 1
    return " ".join(
        f"{1 + i * (width - 2) / n:.1f},{height - 1 - (v - lo) / span * (height - 2):.1f}"
        for i, v in enumerate(finite)
    )


# Every cell of a row, in the order of the header (explorer/columns.TABLE), then the config keys' cells.
_RUN_ROW_HTML = '<tr data-run="{id}">' + "".join(c.cell for c in TABLE) + "{config_cells}</tr>"
_SPARK_HTML = (
    '<svg class="sparkline" width="{w}" height="{h}" viewBox="0 0 {w} {h}" role="img" aria-label="reward curve">'
    '<polyline points="{points}"/></svg>'
)
MAX_TAGS_SHOWN = 4
MAX_LABELS_SHOWN = 3
_LABEL_HTML = (
    '<a class="label-chip small" href="{url}rollouts/?{qs}" style="--lc: {colour}; --lt: {text}" '
    'title="{n} rollout{s} marked {name}">{name} <b>{n}</b></a>'
)


def labels_cell(labels: list[RunLabelCount], *, run_url: str) -> SafeString:
    """The run's labels with their counts of marked rollouts, each a link to those rollouts."""
    cell = SafeString(" ".join(
        format_html(_LABEL_HTML, url=run_url, qs=urlencode({"label": c.name}), colour=c.colour,
                    text=text_colour(c.colour), n=c.rollouts, s="" if c.rollouts == 1 else "s", name=c.name)
        for c in labels[:MAX_LABELS_SHOWN]
    ))
    if len(labels) > MAX_LABELS_SHOWN:
        rest = ", ".join(f"{c.name} {c.rollouts}" for c in labels[MAX_LABELS_SHOWN:])
        cell += format_html(' <span class="muted small" title="{}">+{}</span>', rest, len(labels) - MAX_LABELS_SHOWN)
    return cell


def clip(text: str, length: int) -> str:
    """The truncatechars filter, without its cost for the usual text that is short enough."""
    return text if len(text) <= length else Truncator(text).chars(length)


def run_row_html(run: Run, *, url: str, reward: RunReward | None, group_key: str,
                 group: str | None, labels: list[RunLabelCount] | None = None,
                 config_keys: Sequence[str] = ()) -> SafeString:
    """The table row of `run` (preceded by a group header row when `group` starts a new group);
    `config_keys` add a cell each (the user's chosen config columns, explorer.columns)."""
    tags = run.tags or []
    shown = format_html_join("", '<span class="tag">{}</span>', ((t,) for t in tags[:MAX_TAGS_SHOWN]))
    if len(tags) > MAX_TAGS_SHOWN:
        shown += format_html('<span class="muted small">+{}</span>', len(tags) - MAX_TAGS_SHOWN)
    when = run.started_at or run.created_at
    # One point is not a trend: a flat line would say "steady", so it gets no sparkline.
    spark = sparkline_points(reward.points) if reward and len(reward.points) > 1 else ""
    html = format_html(
        _RUN_ROW_HTML,
        id=run.public_id,
        name=run.name,
        url=url,
        short_name=clip(run.name, 80),
        checkpoint=format_html(' <span class="muted small">@{}</span>', run.checkpoint_step)
        if run.checkpoint_step is not None else "",
        notes=format_html('<div class="notes muted">{}</div>', clip(run.notes, 100)) if run.notes else "",
        kind=run.kind,
        status=run_badge(run),
        model=run.model,
        model_shown=run.model or "—",
        environment=run.environment,
        environment_shown=run.environment or "—",
        tags=shown,
        labels=labels_cell(labels, run_url=url) if labels else "",
        when=timezone.localtime(when).strftime("%Y-%m-%d %H:%M:%S"),
        when_ago=naturaltime(when),
        duration=explorer_format.duration(run.duration_seconds),
        reward_title=format_html(' title="{}"', reward.key) if reward and reward.key else "",
        reward=explorer_format.num(reward.last if reward else None),
        spark=format_html(_SPARK_HTML, w=SPARK_W, h=SPARK_H, points=spark) if spark else "",
        config_cells=format_html_join("", '<td class="clip cfg">{}</td>',
                                      ((config_value(run.config, k),) for k in config_keys)),
    )
    if group is None:
        return html
    return format_html('<tr class="group-row"><td colspan="{}"><span class="muted">{} =</span> <strong>{}</strong>'
                       "</td></tr>{}", len(TABLE) + len(config_keys), group_key, group, html)
