"""The table rows written in Python (front/rows.py) escape every value as the templates did."""

from __future__ import annotations

import datetime as dt

from django.utils import timezone

from deeprepo_web.explorer.rows import run_row_html
from deeprepo_web.explorer.selectors import RunReward
from deeprepo_web.runs.models import Example, Rollout, Run
from deeprepo_web.trajectories.rows import rollout_row_html

EVIL = '"><script>window.__pwned=1</script>'


def test_run_row_escapes_and_shows_every_cell() -> None:
    run = Run(public_id="abc123", name=EVIL + "x" * 100, notes=EVIL, kind="train", status="running",
              model=EVIL, environment="", tags=["a", EVIL, "c", "d", "e", "f"], checkpoint_step=40,
              created_at=timezone.now() - dt.timedelta(hours=3))
    html = run_row_html(run, url="/p/s/runs/abc123/", reward=RunReward(key="reward", last=0.25, points=[0.1, 0.2]),
                        group_key="config.lr", group=EVIL)

    assert "<script>" not in html and "&lt;script&gt;" in html
    assert 'aria-label="Select &quot;&gt;&lt;script&gt;' in html  # the attribute cannot be broken out of
    assert html.startswith('<tr class="group-row"><td colspan="12"><span class="muted">config.lr =</span>')
    assert '<a href="/p/s/runs/abc123/">' in html and "…</a>" in html  # the name is clipped at 80
    assert '<span class="muted small">@40</span>' in html
    assert '<span class="muted small">+2</span>' in html and html.count('class="tag"') == 4
    assert '<td class="clip c-environment" title="">—</td>' in html  # no environment
    assert "3\xa0hours ago" in html  # naturaltime, as the template showed it
    assert '<td class="num reward c-reward" title="reward">0.25</td>' in html
    assert '<polyline points="1.0,21.0 119.0,1.0"/>' in html


def test_run_row_without_reward_or_group() -> None:
    run = Run(public_id="r1", name="plain", kind="eval", status="finished", tags=[], created_at=timezone.now())
    html = run_row_html(run, url="/u/", reward=None, group_key="", group=None)
    assert html.startswith('<tr data-run="r1">')
    assert '<td class="num reward c-reward">—</td>' in html and "<svg" not in html


def test_rollout_row_escapes_model_text() -> None:
    rollout = Rollout(pk=7, example=Example(key=EVIL), step=None, sample_index=2, reward=0.5,
                      reward_components={EVIL: 0.125}, advantage=-0.25, num_turns=3, input_tokens=12_345,
                      output_tokens=None, cost=0.004, stop_condition=EVIL, error=EVIL, is_truncated=True)
    html = rollout_row_html(rollout, url="/p/s/runs/r/rollouts/7/", bar_span="0.0,1.0")

    assert "<script>" not in html and html.count("&lt;script&gt;") == 5  # key twice, component, stop, error
    assert '<td class="num">—</td><td class="num">2</td>' in html  # no step, sample 2
    assert '<span style="width:50%"></span></span>0.500</td>' in html
    assert "0.12</span>" in html and "<td class=\"num\">-0.25</td>" in html
    assert "12k / —" in html and "$0.00400" in html
    assert 'class="badge bad"' in html and 'class="badge warn">truncated' in html
