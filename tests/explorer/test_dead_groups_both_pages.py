"""A dead group is one thing on both pages: the run page's GRPO health and the Groups tab agree on a
run scored in [-5, 5] (DeadRule: fail at 0 or the lowest reward, pass at the highest)."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse

from tests.factories import rollout

pytestmark = pytest.mark.django_db

# Two rollouts per example at step 0. -5, -2 and 0 fail; 5 passes; 2 and 0.5 are dead but neither
# (the Groups tab once called 2 "all pass", judging by a fixed 1); F has variance.
GROUPS = {"A": [-5, -5], "B": [5, 5], "C": [2, 2], "D": [-2, -2], "E": [0.5, 0.5], "F": [-5, 5], "G": [0, 0]}


def test_health_and_groups_tab_count_the_same_dead_groups(client: Any, team: Any) -> None:
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="wide-rewards")
    rollouts_ingest(run=run, rollouts=[
        rollout(ex, reward=float(r), step=0, sample_index=i, uid=f"{ex}-{i}")
        for ex, rewards in GROUPS.items() for i, r in enumerate(rewards)])
    client.force_login(team.viewer)

    health = client.get(reverse("run_health", args=[team.project.slug, run.public_id])).json()
    assert health["groups"] == [7]
    dead, fail, passed = (round(health[k][0] * 7) for k in ("frac_dead", "frac_all_fail", "frac_all_pass"))
    assert (dead, fail, passed) == (6, 3, 1)

    html = client.get(reverse("groups", args=[team.project.slug, run.public_id]), {"step": "0"}).content.decode()
    assert "<b>7</b> groups" in html
    assert f"({dead}: {fail} all-fail, {passed} all-pass, {dead - fail - passed} other zero-variance)" in html
    badges = re.findall(r"dead · (all fail|all pass|zero variance)", html)
    assert sorted(badges) == sorted(["all fail"] * 3 + ["all pass"] + ["zero variance"] * 2)
