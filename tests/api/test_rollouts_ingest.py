from __future__ import annotations

from deeprepo_web.runs.models import Example, Rollout, Run, ToolCall, Turn
from tests.factories import rollout


def _run(api, **extra) -> str:
    return api.post("/runs", {"name": "r", "environment": "audit", **extra}).json()["id"]


def test_rollouts_with_turns_and_nested_calls_are_stored(api):
    run_id = _run(api)
    res = api.post(f"/runs/{run_id}/rollouts", [rollout("ex-1", reward=0.9), rollout("ex-2", reward=0.1)])
    assert res.status_code == 200 and res.json() == {"received": 2, "stored": 2}
    r = Rollout.objects.get(run__public_id=run_id, example__key="ex-1")
    assert r.reward == 0.9 and r.num_turns == 3 and r.reward_components == {"f1": 0.9}
    turns = list(Turn.objects.filter(rollout=r).order_by("index"))
    assert [t.role for t in turns] == ["user", "assistant", "assistant", "assistant"]
    batch = ToolCall.objects.get(rollout=r, turn=turns[1], name="llm_batch")
    subs = list(batch.sub_calls.order_by("index"))
    assert [s.output for s in subs] == ["SQL injection", "MD5 hashing"]
    assert subs[0].model == "sub-model" and subs[1].input_tokens == 55
    read = ToolCall.objects.get(rollout=r, turn=turns[1], name="read_file")
    assert read.arguments == {"path": "src/f0.py"} and read.parent_id is None


def test_same_batch_twice_is_stored_once(api):
    run_id = _run(api)
    batch = [rollout("ex-1", sample_index=i, reward=i / 4) for i in range(4)]
    assert api.post(f"/runs/{run_id}/rollouts", batch).json()["stored"] == 4
    assert api.post(f"/runs/{run_id}/rollouts", batch).json()["stored"] == 0
    assert Rollout.objects.filter(run__public_id=run_id).count() == 4
    assert Turn.objects.filter(rollout__run__public_id=run_id).count() == 16


def test_client_uid_makes_a_resend_a_no_op_even_if_content_differs(api):
    run_id = _run(api)
    api.post(f"/runs/{run_id}/rollouts", [rollout("ex-1", uid="u-1", reward=0.5)])
    api.post(f"/runs/{run_id}/rollouts", [rollout("ex-1", uid="u-1", reward=0.7)])
    assert list(Rollout.objects.filter(run__public_id=run_id).values_list("reward", flat=True)) == [0.5]


def test_examples_are_shared_across_runs_of_the_project(api):
    a, b = _run(api), _run(api)
    api.post(f"/runs/{a}/rollouts", [rollout("ex-1", prompt=[{"role": "user", "content": "p"}], oracle="diff")])
    api.post(f"/runs/{b}/rollouts", [rollout("ex-1")])
    example = Example.objects.get(key="ex-1")
    assert example.rollouts.count() == 2 and example.oracle == "diff"


def test_rollout_list_and_detail_endpoints(api):
    run_id = _run(api)
    api.post(f"/runs/{run_id}/rollouts", [rollout(f"ex-{i}", reward=i / 10, step=1) for i in range(5)])
    page = api.get(f"/runs/{run_id}/rollouts", order="-reward", per_page=2).json()
    assert [r["reward"] for r in page["rollouts"]] == [0.4, 0.3] and page["has_next"] is True
    detail = api.get(f"/runs/{run_id}/rollouts/{page['rollouts'][0]['id']}").json()
    assert detail["turns"][1]["tool_calls"][0]["name"] == "read_file"
    assert any(c["parent"] for c in detail["turns"][1]["tool_calls"])


def test_run_deletion_cascades(api):
    run_id = _run(api)
    api.post(f"/runs/{run_id}/rollouts", [rollout("ex-1")])
    Run.objects.filter(public_id=run_id).delete()
    assert Turn.objects.count() == 0 and ToolCall.objects.count() == 0


def test_service_accepts_ints_and_floats_mixed_in_one_batch(team):
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="mixed")
    stored = rollouts_ingest(run=run, rollouts=[rollout("a", reward=1), rollout("b", reward=0.5, cost=2)])
    assert stored == 2
    assert sorted(Rollout.objects.filter(run=run).values_list("reward", flat=True)) == [0.5, 1.0]
