"""The rollouts list's table rows, written in Python (see explorer.rows for why)."""

from __future__ import annotations

from typing import Any

from django.utils.html import format_html, format_html_join
from django.utils.safestring import SafeString

from deeprepo_web.explorer.rows import clip
from deeprepo_web.runs.models import Rollout
from deeprepo_web.trajectories.templatetags import trajectory_tags

_ROLLOUT_ROW_HTML = (
    "<tr>"
    '<td class="tj-key"><a href="{url}" title="{key_title}">{key}</a></td>'
    '<td class="num">{step}</td>'
    '<td class="num">{sample}</td>'
    '<td class="num tj-reward"><span class="rbar"><span style="width:{bar}%"></span></span>{reward}</td>'
    '<td class="tj-comps">{components}</td>'
    '<td class="num">{advantage}</td>'
    '<td class="num">{turns}</td>'
    '<td class="num">{tokens_in} / {tokens_out}</td>'
    '<td class="num">{cost}</td>'
    "<td>{stop}</td>"
    "<td>{badges}</td>"
    "</tr>"
)


def _dash(value: Any) -> Any:
    return "—" if value is None else value


def rollout_row_html(r: Rollout, *, url: str, bar_span: str, group_advantage: float | None = None) -> SafeString:
    """The rollouts list's row of `r`; model text (example key, stop, error) is cleaned as by |clean.
    `group_advantage`: for a rollout that logged none, its group's (shown "+1.00 (group)")."""
    t = trajectory_tags
    key = t.clean(r.example.key)
    components = r.reward_components if isinstance(r.reward_components, dict) else {}
    badges = format_html('<span class="badge bad" title="{}">error</span>', clip(t.clean(r.error), 300)) \
        if r.error else SafeString("")
    if r.is_truncated:
        badges += SafeString('<span class="badge warn">truncated</span>')
    return format_html(
        _ROLLOUT_ROW_HTML,
        url=url,
        key_title=clip(key, 300),
        key=clip(key, 60),
        step=_dash(r.step),
        sample=_dash(r.sample_index),
        bar=t.bar_width(r.reward, bar_span),
        reward=t.num(r.reward),
        components=format_html_join(
            "", '<span class="comp"><span class="muted">{}</span> {}</span>',
            ((t.clean(k), t.num(v, 2)) for k, v in components.items())),
        advantage=t.signed(r.advantage) if r.advantage is not None or group_advantage is None else format_html(
            '<span class="tj-adv-group" title="not logged: computed from the rewards of its group, as on the Groups '
            'tab">{} <span class="muted small">(group)</span></span>', t.signed(group_advantage)),
        turns=r.num_turns,
        tokens_in=t.tokens(r.input_tokens),
        tokens_out=t.tokens(r.output_tokens),
        cost=t.usd(r.cost),
        stop=format_html('<span class="tag">{}</span>', t.clean(r.stop_condition)) if r.stop_condition else "",
        badges=badges,
    )
