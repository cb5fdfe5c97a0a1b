"""A rollout whose turns carry token counts gets their sums as its tokens in / out (issue 25, item 6),
so the rollouts table, Compare and the tokens chart have them; a rollout's own counts win."""

from __future__ import annotations

from typing import Any

import pytest

from deeprepo_web.runs.models import Rollout

pytestmark = pytest.mark.django_db


def test_turn_tokens_add_up_to_the_rollouts(api: Any, client: Any, team: Any) -> None:
    run_id = api.post("/runs", {"name": "agent", "kind": "eval"}).json()["id"]
    turns = [{"role": "assistant", "content": "a", "input_tokens": 100, "output_tokens": 7},
             {"role": "tool", "content": "x"},
             {"role": "assistant", "content": "b", "input_tokens": 130, "output_tokens": 5}]
    r = api.post(f"/runs/{run_id}/rollouts", [
        {"uid": "summed", "example_key": "q1", "reward": 1.0, "turns": turns},
        {"uid": "own", "example_key": "q1", "reward": 0.0, "turns": turns, "input_tokens": 50, "output_tokens": 2},
        {"uid": "none", "example_key": "q1", "reward": 0.0, "turns": [{"role": "assistant", "content": "c"}]},
    ])
    assert r.status_code == 200, r.content
    got = {x.uid: (x.input_tokens, x.output_tokens) for x in Rollout.objects.filter(run__public_id=run_id)}
    assert got == {"summed": (230, 12), "own": (50, 2), "none": (None, None)}
    client.force_login(team.viewer)
    rollout = Rollout.objects.get(uid="summed")
    page = client.get(f"/p/{team.project.slug}/runs/{run_id}/rollouts/{rollout.pk}/").content.decode()
    assert "230" in page and "12" in page
