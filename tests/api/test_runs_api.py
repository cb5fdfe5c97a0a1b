from __future__ import annotations

from deeprepo_web.runs.models import Run


def test_create_run_returns_public_id_and_stores_config(api, team):
    res = api.post("/runs", {"name": "grpo-1", "config": {"lr": 1e-5}, "tags": ["a"], "model": "qwen"})
    assert res.status_code == 201, res.content
    body = res.json()
    run = Run.objects.get(public_id=body["id"])
    assert run.project == team.project
    assert run.config == {"lr": 1e-5} and run.tags == ["a"] and run.model == "qwen"
    assert body["url"].endswith(f"/p/demo/runs/{run.public_id}/")


def test_create_with_external_id_is_idempotent(api):
    first = api.post("/runs", {"name": "r", "external_id": "client-uuid-1"})
    again = api.post("/runs", {"name": "r", "external_id": "client-uuid-1"})
    assert first.status_code == 201 and again.status_code == 200
    assert first.json()["id"] == again.json()["id"]
    assert Run.objects.filter(external_id="client-uuid-1").count() == 1


def test_update_and_finish_run(api):
    run_id = api.post("/runs", {"name": "r"}).json()["id"]
    res = api.patch(f"/runs/{run_id}", {"tags": ["x"], "notes": "hello"})
    assert res.status_code == 200 and res.json()["tags"] == ["x"]
    res = api.post(f"/runs/{run_id}/finish", {"status": "failed"})
    assert res.status_code == 200
    run = Run.objects.get(public_id=run_id)
    assert run.status == "failed" and run.finished_at is not None and run.notes == "hello"


def test_eval_run_links_to_its_parent_checkpoint(api):
    parent = api.post("/runs", {"name": "train"}).json()["id"]
    res = api.post("/runs", {"name": "eval", "kind": "eval", "parent_run_id": parent, "checkpoint_step": 40})
    assert res.json()["parent_run_id"] == parent and res.json()["checkpoint_step"] == 40


def test_read_endpoints_list_runs_of_the_key_project_only(api, other_api):
    api.post("/runs", {"name": "mine"})
    other_api.post("/runs", {"name": "theirs"})
    names = [r["name"] for r in api.get("/runs").json()]
    assert names == ["mine"]


def test_key_of_another_project_gets_404_on_a_run(api, other_api):
    run_id = api.post("/runs", {"name": "mine"}).json()["id"]
    assert other_api.get(f"/runs/{run_id}").status_code == 404
    res = other_api.post(f"/runs/{run_id}/metrics", [{"step": 0, "values": {"a": 1}}])
    assert res.status_code == 404 and "error" in res.json()


def test_session_reads_need_membership(client, api, team):
    run_id = api.post("/runs", {"name": "mine"}).json()["id"]
    client.force_login(team.viewer)
    assert client.get(f"/api/v1/runs/{run_id}").status_code == 200
    client.force_login(team.outsider)
    assert client.get(f"/api/v1/runs/{run_id}").status_code == 404


def test_missing_or_revoked_key_is_401(client, api, team):
    from deeprepo_web.accounts.models import ApiKey
    from deeprepo_web.accounts.services import api_key_revoke

    res = client.post("/api/v1/runs", data="{}", content_type="application/json")
    assert res.status_code == 401 and "API key" in res.json()["error"]
    for key in ApiKey.objects.filter(project=team.project):
        api_key_revoke(key=key)
    assert api.post("/runs", {"name": "x"}).status_code == 401


def test_openapi_schema_is_served(client):
    res = client.get("/api/openapi.json")
    assert res.status_code == 200
    paths = res.json()["paths"]
    assert "/api/v1/runs/{run_id}/metrics" in paths and "/api/v1/runs/{run_id}/rollouts" in paths
