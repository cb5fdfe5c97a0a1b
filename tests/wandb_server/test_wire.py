"""The W&B endpoints spoken to directly (Django's test client): bad input, re-sent chunks, other
projects. What the SDK sends is copied in shape from its sources (WIRE.md), values are ours."""

from __future__ import annotations

import base64
import json
import math
from typing import Any

import pytest
from django.utils import timezone

from deeprepo_web.accounts.models import ApiKey, hash_key
from deeprepo_web.runs.models import Metric, MetricSeries, Run
from deeprepo_web.wandb_server.models import ConsoleLine

pytestmark = pytest.mark.django_db


def _auth(key: str) -> dict[str, str]:
    return {"HTTP_AUTHORIZATION": "Basic " + base64.b64encode(f"api:{key}".encode()).decode()}


def _gql(client: Any, key: str, query: str, variables: dict[str, Any] | None = None, **extra: Any) -> Any:
    body = {"query": query, "variables": variables or {}, **extra}
    return client.post("/graphql", json.dumps(body), content_type="application/json", **_auth(key))


def _stream(client: Any, key: str, run: str, body: bytes | str, writer: str = "", project: str = "p") -> Any:
    headers = _auth(key)
    if writer:
        headers["HTTP_X_WANDB_ASYNC_CLIENT_ID"] = writer
    return client.post(f"/files/demo/{project}/{run}/file_stream", body, content_type="application/json", **headers)


def _history(offset: int, steps: range, **files: Any) -> str:
    lines = [json.dumps({"_step": s, "_timestamp": 1.7e9 + s, "loss": s / 10}) for s in steps]
    return json.dumps({"files": {"wandb-history.jsonl": {"offset": offset, "content": lines}, **files}})


UPSERT = """mutation UpsertBucket($name: String, $project: String, $tags: [String!], $config: JSONString) {
  upsertBucket(input: {name: $name, modelName: $project, tags: $tags, config: $config}) {
    bucket { id name displayName historyLineCount project { name entity { name } } } inserted } }"""


def test_viewer_with_fragment_include_and_no_operation_name(client: Any, team: Any) -> None:
    query = """query { viewer { ...V } serverInfo { cliVersionInfo
      latestLocalVersionInfo @include(if: $withLocal) { outOfDate } } }
      fragment V on User { id entity flags teams { edges { node { name } } } }"""
    query = "query Q($withLocal: Boolean!) " + query.removeprefix("query ")
    res = _gql(client, team.key, query, {"withLocal": False})
    data = res.json()["data"]
    assert res.status_code == 200 and data["viewer"]["entity"] == "demo" and data["viewer"]["flags"] == "{}"
    assert data["serverInfo"]["cliVersionInfo"]["max_cli_version"] and "latestLocalVersionInfo" not in data["serverInfo"]


def test_introspection_is_served(client: Any, team: Any) -> None:
    res = _gql(client, team.key, '{ __type(name: "ServerInfo") { fields { name } } }')
    names = {f["name"] for f in res.json()["data"]["__type"]["fields"]}
    assert {"cliVersionInfo", "features"} <= names


def test_malformed_and_unknown_operations_are_graphql_errors(client: Any, team: Any) -> None:
    res = client.post("/graphql", b"{not json", content_type="application/json", **_auth(team.key))
    assert res.status_code == 400 and "not JSON" in res.json()["errors"][0]["message"]
    res = _gql(client, team.key, "query { viewer { ")
    assert res.status_code == 200 and "Syntax Error" in res.json()["errors"][0]["message"]
    res = _gql(client, team.key, "mutation { deleteRun(input: {id: \"x\"}) { success } }")
    assert res.status_code == 200 and "deleteRun" in res.json()["errors"][0]["message"]
    assert Run.objects.count() == 0


@pytest.mark.parametrize("secret", ["wrong", "drk_00000000-" + "a" * 40, ""])
def test_wrong_key_is_401_and_makes_no_run(client: Any, team: Any, secret: str) -> None:
    res = _gql(client, secret, UPSERT, {"name": "r1", "project": "p"})
    assert res.status_code == 401 and "API key" in res.json()["errors"][0]["message"]
    assert _stream(client, secret, "r1", _history(0, range(3))).status_code == 401
    assert Run.objects.count() == 0


def test_revoked_key_is_refused(client: Any, team: Any) -> None:
    ApiKey.objects.filter(secret_hash=hash_key(team.key)).update(revoked_at=timezone.now())
    assert _gql(client, team.key, UPSERT, {"name": "r1", "project": "p"}).status_code == 401
    assert Run.objects.count() == 0


def test_new_keys_pass_every_sdk_key_check(team: Any) -> None:
    key = team.key
    _, suffix = key.split("-", 1)
    assert len(suffix) == 40 and suffix.isalnum()  # 0.17-0.21: exactly 40 after the first '-'
    from wandb.sdk.lib.wbauth.validation import check_api_key  # the newest SDK's own check

    assert check_api_key(key) is None


def test_upsert_maps_project_to_tag_and_config_values(client: Any, team: Any) -> None:
    config = json.dumps({"lr": {"value": 0.001, "desc": None}, "_wandb": {"value": {"t": {"1": [1]}}}})
    res = _gql(client, team.key, UPSERT, {"name": "r1", "project": "grpo", "tags": ["a"], "config": config})
    bucket = res.json()["data"]["upsertBucket"]["bucket"]
    assert bucket["name"] == "r1" and bucket["project"] == {"name": "grpo", "entity": {"name": "demo"}}
    run = Run.objects.get()
    assert run.config == {"lr": 0.001} and set(run.tags) == {"a", "wandb:grpo"} and run.external_id == "grpo/r1"


def test_resent_chunk_is_stored_once_and_overlap_adds_only_new_lines(client: Any, team: Any) -> None:
    for _ in range(2):
        assert _stream(client, team.key, "r1", _history(0, range(5))).status_code == 200
    assert _stream(client, team.key, "r1", _history(3, range(3, 8))).status_code == 200  # lines 3, 4 again
    series = MetricSeries.objects.get(key="loss")
    assert list(Metric.objects.filter(series=series).order_by("step").values_list("step", flat=True)) == list(range(8))
    assert series.count == 8


def test_unknown_run_for_a_valid_key_is_made_not_refused(client: Any, team: Any) -> None:
    res = _stream(client, team.key, "never-announced", _history(0, range(2)))
    assert res.status_code == 200 and res.json() == {}
    run = Run.objects.get(external_id="p/never-announced")
    assert run.project == team.project and MetricSeries.objects.get(run=run, key="loss").count == 2


def test_nan_and_infinity_bare_tokens(client: Any, team: Any) -> None:
    lines = ['{"_step": 0, "loss": NaN, "kl": Infinity, "adv": -Infinity}']
    summary = '{"loss": NaN, "best": 1.5}'
    body = json.dumps({"files": {"wandb-history.jsonl": {"offset": 0, "content": lines},
                                 "wandb-summary.json": {"offset": 0, "content": [summary]}}})
    assert _stream(client, team.key, "r1", body).status_code == 200
    values = {s.key: Metric.objects.get(series=s).value for s in MetricSeries.objects.all()}
    assert math.isnan(values["loss"]) and values["kl"] == math.inf and values["adv"] == -math.inf
    assert Run.objects.get().summary == {"loss": "NaN", "best": 1.5}


def test_ten_megabyte_chunk(client: Any, team: Any, settings: Any) -> None:
    settings.DATA_UPLOAD_MAX_MEMORY_SIZE = 32 << 20
    pad = "x" * 1000
    lines = [json.dumps({"_step": s, "loss": s, "note": pad}) for s in range(10_000)]
    body = json.dumps({"files": {"wandb-history.jsonl": {"offset": 0, "content": lines}}})
    assert len(body) > 10_000_000
    assert _stream(client, team.key, "big", body).status_code == 200
    assert MetricSeries.objects.get(key="loss").count == 10_000


def test_console_rewrites_and_writers(client: Any, team: Any) -> None:
    def out(offset: int, lines: list[str], writer: str = "") -> None:
        body = json.dumps({"files": {"output.log": {"offset": offset, "content": lines}}})
        assert _stream(client, team.key, "r1", body, writer=writer).status_code == 200

    out(0, ["2026-01-01T10:00:00.000001 start", "2026-01-01T10:00:01.000001 progress 10%"])
    out(1, ["2026-01-01T10:00:02.000001 progress 100%", "ERROR 2026-01-01T10:00:03.000001 boom"])
    out(0, ["2026-01-01T10:00:00.500001 worker up"], writer="w2")
    rows = [(c.writer, c.offset, c.stream, c.text) for c in ConsoleLine.objects.order_by("writer", "offset")]
    assert rows == [("", 0, "stdout", "start"), ("", 1, "stdout", "progress 100%"), ("", 2, "stderr", "boom"),
                    ("w2", 0, "stdout", "worker up")]


def test_complete_with_exit_code_fails_the_run(client: Any, team: Any) -> None:
    _stream(client, team.key, "r1", _history(0, range(2)))
    assert _stream(client, team.key, "r1", json.dumps({"complete": True, "exitcode": 3})).status_code == 200
    run = Run.objects.get()
    assert run.status == "failed" and run.summary["exit_code"] == 3 and run.finished_at is not None


def test_run_of_another_project_is_not_found(client: Any, team: Any) -> None:
    _gql(client, team.other_key, UPSERT, {"name": "secret-run", "project": "p"})
    theirs = Run.objects.get(project=team.other_project)
    query = """query RunResumeStatus($project: String, $name: String!) { model(name: $project) {
      bucket(name: $name, missingOk: true) { id name config historyLineCount } } }"""
    for name in ("secret-run", theirs.public_id):
        res = _gql(client, team.key, query, {"project": "p", "name": name})
        assert res.status_code == 200 and res.json()["data"]["model"]["bucket"] is None
    # A file stream for that name with our key lands in a run of our own project; theirs is untouched.
    _stream(client, team.key, "secret-run", _history(0, range(2)))
    assert not MetricSeries.objects.filter(run=theirs).exists()
    assert Run.objects.filter(project=team.project, external_id="p/secret-run").exists()


def test_upload_url_is_signed_and_expires(client: Any, team: Any) -> None:
    query = """mutation CreateRunFiles($entity: String!, $project: String!, $run: String!, $files: [String!]!) {
      createRunFiles(input: {entityName: $entity, projectName: $project, runName: $run, files: $files}) {
        runID uploadHeaders files { name uploadUrl } } }"""
    res = _gql(client, team.key, query, {"entity": "demo", "project": "p", "run": "r1", "files": ["config.yaml"]})
    url = res.json()["data"]["createRunFiles"]["files"][0]["uploadUrl"]
    assert url.startswith("http://testserver/files/upload/")
    path = url.removeprefix("http://testserver")
    assert client.put(path, b"lr: 0.1\n", content_type="application/octet-stream").status_code == 200
    assert Run.objects.get().artifacts.get().name == "wandb/config.yaml"
    tampered = path[:-3] + ("AAA" if not path.endswith("AAA") else "BBB")
    assert client.put(tampered, b"x", content_type="application/octet-stream").status_code == 403


CREATE_FILES = """mutation CreateRunFiles($entity: String!, $project: String!, $run: String!, $files: [String!]!) {
  createRunFiles(input: {entityName: $entity, projectName: $project, runName: $run, files: $files}) {
    files { name uploadUrl } } }"""


def _upload(client: Any, key: str, name: str, doc: Any) -> None:
    res = _gql(client, key, CREATE_FILES, {"entity": "demo", "project": "p", "run": "r1", "files": [name]})
    url = res.json()["data"]["createRunFiles"]["files"][0]["uploadUrl"]
    put = client.put(url.removeprefix("http://testserver"), json.dumps(doc).encode(),
                     content_type="application/octet-stream")
    assert put.status_code == 200, put.content


def test_cumulative_table_adds_only_new_rows(client: Any, team: Any) -> None:
    """verl logs its whole generations table again at every step: rows already sent are not doubled."""
    from deeprepo_web.runs.models import Rollout

    cols = ["step", "input", "output", "score"]
    first = [[1, "2+2?", "4", 1.0], [1, "3+3?", "7", 0.0]]
    _upload(client, team.key, "media/table/val/generations_1_aaaa1111.table.json", {"columns": cols, "data": first})
    grown = first + [[2, "2+2?", "5", 0.0], [2, "5+5?", "10", 1.0]]
    _upload(client, team.key, "media/table/val/generations_2_bbbb2222.table.json", {"columns": cols, "data": grown})
    rows = sorted(Rollout.objects.values_list("step", "final_answer", "reward"))
    assert rows == [(1, "4", 1.0), (1, "7", 0.0), (2, "10", 1.0), (2, "5", 0.0)]


def test_openrlhf_generated_samples_table(client: Any, team: Any) -> None:
    from deeprepo_web.runs.models import Rollout

    doc = {"columns": ["global_step", "text", "reward"],
           "data": [[10, "<|user|>1+1?<|assistant|>2", 1.0], [10, "<|user|>1+2?<|assistant|>4", -1.0]]}
    _upload(client, team.key, "media/table/train/generated_samples_10_cccc3333.table.json", doc)
    rows = sorted(Rollout.objects.values_list("step", "reward", "final_answer"))
    assert rows == [(10, -1.0, "<|user|>1+2?<|assistant|>4"), (10, 1.0, "<|user|>1+1?<|assistant|>2")]


def test_a_table_that_is_not_rollouts_is_kept_as_a_file(client: Any, team: Any) -> None:
    from deeprepo_web.artifacts.models import Artifact
    from deeprepo_web.runs.models import Rollout

    _upload(client, team.key, "media/table/lr_table_3_dddd4444.table.json",
            {"columns": ["epoch", "lr"], "data": [[1, 0.1]]})
    assert Rollout.objects.count() == 0
    assert Artifact.objects.get().name == "wandb/media/table/lr_table_3_dddd4444.table.json"


def test_logs_tab_shows_lines_and_alerts_escaped_and_hides_from_outsiders(client: Any, team: Any) -> None:
    body = json.dumps({"files": {"output.log": {"offset": 0, "content": [
        "2026-01-01T10:00:00.000001 <script>alert(1)</script> step 1"]}}})
    _stream(client, team.key, "r1", body)
    alert = """mutation A($e: String!, $p: String!, $r: String!) { notifyScriptableRunAlert(input: {entityName: $e,
      projectName: $p, runName: $r, title: "reward <b>collapsed</b>", text: "below 0.1", severity: WARN}) { success } }"""
    assert _gql(client, team.key, alert, {"e": "demo", "p": "p", "r": "r1"}).json()["data"]["notifyScriptableRunAlert"]
    run = Run.objects.get()
    url = f"/p/demo/runs/{run.public_id}/logs/"
    client.force_login(team.viewer)
    html = client.get(url).content.decode()
    assert "&lt;script&gt;alert(1)&lt;/script&gt; step 1" in html and "<script>alert(1)" not in html
    assert "reward &lt;b&gt;collapsed&lt;/b&gt;" in html and "sev-warn" in html
    client.force_login(team.outsider)
    assert client.get(url).status_code == 404


def test_bad_history_lines_are_skipped_kept_lines_stored_and_the_run_says_why(client: Any, team: Any) -> None:
    from deeprepo_web.runs.models import IngestRefusal

    lines = ['{"_step": 0, "loss": 1}', '{"_step": 1, "loss": ', '{"loss": 3}', '{"_step": 3, "loss": 4}']
    body = json.dumps({"files": {"wandb-history.jsonl": {"offset": 0, "content": lines}}})
    assert _stream(client, team.key, "r1", body).status_code == 200
    assert list(Metric.objects.order_by("step").values_list("step", "value")) == [(0, 1.0), (3, 4.0)]
    error = IngestRefusal.objects.get().error
    assert "wandb-history.jsonl line 1: not JSON" in error and "line 2: no numeric _step" in error
