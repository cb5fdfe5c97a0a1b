"""Rollouts go in by COPY; a batch seen in part before stores only what is new, turns included."""

from __future__ import annotations

from deeprepo_web.runs.models import Rollout, Run, ToolCall, Turn
from tests.factories import rollout


def test_a_partly_seen_batch_stores_only_new_rollouts_with_their_turns_once(api):
    run_id = api.post("/runs", {"name": "r"}).json()["id"]
    first = [rollout(f"ex-{i}", uid=f"u{i}") for i in range(3)]
    again = [rollout(f"ex-{i}", uid=f"u{i}") for i in range(1, 5)]  # u1, u2 seen; u3, u4 new
    assert api.post(f"/runs/{run_id}/rollouts", first).json() == {"received": 3, "stored": 3}
    assert api.post(f"/runs/{run_id}/rollouts", again).json() == {"received": 4, "stored": 2}
    assert api.post(f"/runs/{run_id}/rollouts", again).json() == {"received": 4, "stored": 0}
    run = Run.objects.get(public_id=run_id)
    assert sorted(Rollout.objects.filter(run=run).values_list("uid", flat=True)) == ["u0", "u1", "u2", "u3", "u4"]
    turns_each = len(first[0]["turns"])
    for r in Rollout.objects.filter(run=run):
        assert Turn.objects.filter(rollout=r).count() == turns_each
    calls = ToolCall.objects.filter(rollout__run=run).count()
    assert calls == 5 * ToolCall.objects.filter(rollout__run=run, rollout__uid="u0").count() > 0


def test_the_same_uid_twice_in_one_batch_is_stored_once(api):
    run_id = api.post("/runs", {"name": "r"}).json()["id"]
    batch = [rollout("ex-1", uid="dup", reward=0.1), rollout("ex-1", uid="dup", reward=0.9)]
    assert api.post(f"/runs/{run_id}/rollouts", batch).json() == {"received": 2, "stored": 1}
    r = Rollout.objects.get(run__public_id=run_id)
    assert r.reward == 0.1 and Turn.objects.filter(rollout=r).count() == len(batch[0]["turns"])
