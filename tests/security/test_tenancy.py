"""Walk every URL in the URL conf as an outsider, a viewer and an editor of a project.

Outsiders get 404 on everything of the project (pages, partials, API, exports, downloads);
viewers read but never write. New URLs are covered automatically: a URL parameter this walker
cannot fill fails the test, so whoever adds it also teaches the walker.
"""

from __future__ import annotations

import base64
import re
from typing import Any

import pytest
from django.urls import URLPattern, URLResolver, get_resolver

from deeprepo_web.artifacts.services import artifact_store_file
from deeprepo_web.importers.models import ImportJob
from deeprepo_web.jobs.models import JobTemplate
from deeprepo_web.jobs.services.clusters import cluster_save
from deeprepo_web.jobs.services.launch import job_launch
from deeprepo_web.jobs.services.templates import builtin_templates_ensure
from deeprepo_web.judge.models import JudgeJob
from deeprepo_web.labels.services import label_create, mark_create
from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
from deeprepo_web.runs.models import BlobRef, Example, Rollout, Run, ToolCall
from deeprepo_web.runs.services import run_create
from deeprepo_web.sharing.services import share_create
from tests.factories import rollout

# Reachable without project membership on purpose.
PUBLIC = {"login", "logout", "home", "api-1:openapi-json", "api-1:openapi-view",
          "mlflow_version",  # GET /version: the MLflow server version MLflow clients ask before tracing
          "oidc_authentication_init", "oidc_authentication_callback"}  # single sign-on (tests/sso)
# /storage/ URLs are capabilities: a signed, expiring token is the permission (tests/artifacts).
PUBLIC_PREFIXES = ("/s/", "/static/", "/api/docs", "/api/openapi", "/storage/")


def _walk(resolver: Any, prefix: str = "", ns: str = "") -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for p in resolver.url_patterns:
        if isinstance(p, URLResolver):
            sub_ns = f"{ns}{p.namespace}:" if p.namespace else ns
            out += _walk(p, prefix + str(p.pattern), sub_ns)
        elif isinstance(p, URLPattern):
            out.append((prefix + str(p.pattern), f"{ns}{p.name}" if p.name else ""))
    return out


def _fill(pattern: str, values: dict[str, str]) -> str:
    def sub(m: re.Match[str]) -> str:
        name = m.group("name")
        if name not in values:
            raise AssertionError(f"tenancy walker cannot fill <{name}> in {pattern!r}: add it to `values`")
        return values[name]

    path = re.sub(r"<(?:(?P<conv>[^:>]+):)?(?P<name>[^>]+)>", sub, pattern)
    path = path.replace("^", "").replace("$", "").replace("\\Z", "")
    return "/" + path.lstrip("/")


@pytest.fixture
def world(team: Any, tmp_path: Any) -> dict[str, str]:
    run, _ = run_create(project=team.project, name="r", environment="env")
    rollouts_ingest(run=run, rollouts=[rollout("ex-1")])
    r = Rollout.objects.get(run=run)
    call = ToolCall.objects.filter(rollout=r).first()
    assert call is not None
    link, _ = share_create(project=team.project, user=team.owner, kind="run", target=run.public_id)
    file = tmp_path / "log.txt"
    file.write_text("hello")
    artifact = artifact_store_file(run=run, name="log.txt", kind="log", path=file)
    image = rollout("ex-img")
    png = base64.b64encode(b"\x89PNG\r\n\x1a\n" + bytes(2048)).decode()
    image["turns"][0]["content"] = f"see ![plot](data:image/png;base64,{png})"
    rollouts_ingest(run=run, rollouts=[image])
    builtin_templates_ensure()
    cluster = cluster_save(project=team.project, name="here", kind="local",
                           settings_in={"state_dir": str(tmp_path / "jobs"), "workdir": str(tmp_path)})
    template = JobTemplate.objects.get(slug="demo-grpo", project__isnull=True)
    # Never dispatched: the test transaction never commits, so the on-commit enqueue never fires.
    job = job_launch(project=team.project, template=template, cluster=cluster, params={}, user=team.owner)
    from deeprepo_web.sweeps.services import sweep_create

    sweep = sweep_create(project=team.project, template=template, cluster=cluster, specs={"lr": "0.01, 0.1"},
                         method="grid", metric="reward", max_trials=2, max_parallel=1)
    upload = ImportJob.objects.create(project=team.project, user=team.owner, source_name="x.jsonl", path="/nope")
    label = label_create(project=team.project, name="found")
    mark = mark_create(label=label, rollout=r, user=team.owner)
    judge_job = JudgeJob.objects.create(project=team.project, rubric="r", label=label, status="cancelled")
    from deeprepo_web.reports.services import report_create, report_publish

    report = report_create(project=team.project, user=team.owner, title="r", blocks=[{"kind": "text", "text": "x"}])
    report_publish(report=report, user=team.owner)
    return {
        "rid": report.public_id,
        "uid": report.blocks.get().uid,
        "number": "1",
        "fmt": "jsonl",
        "mark_id": str(mark.pk),
        "judge_id": judge_job.public_id,
        "slug": team.project.slug,
        "run_id": run.public_id,
        "rollout_id": str(r.pk),
        "example_id": str(Example.objects.filter(key="ex-1").get().pk),
        "key_id": "1",
        "membership_id": "1",
        "call_id": str(call.pk),
        "kind": "call",
        "object_id": str(call.pk),
        "turn_id": str(call.turn_id),
        "index": "0",
        "sha": BlobRef.objects.filter(run=run).values_list("sha", flat=True)[0],
        "artifact_id": str(artifact.pk),
        "import_id": str(upload.pk),
        "job_id": job.public_id,
        "sweep_id": sweep.public_id,
        "template_slug": template.slug,
        "template_id": str(template.pk),
        "cluster_id": str(cluster.pk),
        "link_id": str(link.pk),
        "token": "not-a-token",  # share pages are public by design (tested in tests/compare)
        "entity": team.project.slug,  # the W&B file stream: entity and W&B project name
        "project": "wandb-project",
        # MLflow's REST paths take keys only (401 for a session); another project's key: tests/mlflow_server
        "endpoint": "experiments/get",
        "path": f"0/{run.public_id}/artifacts/log.txt",
    }


def _project_urls(values: dict[str, str]) -> list[tuple[str, str]]:
    urls = []
    for pattern, name in _walk(get_resolver()):
        path = _fill(pattern, values)
        if name in PUBLIC or path.startswith(PUBLIC_PREFIXES) or path == "/":
            continue
        urls.append((path, name))
    return urls


KEY_ONLY = ("/api/", "/v1/", "/graphql", "/files/")  # endpoints that take an API key, never a session
# A member's own view settings (saved per user): a viewer may save them; they change nothing of the project.
OWN_SETTINGS = {"project_columns"}


def test_every_url_is_404_for_an_outsider(client, team, world):
    client.force_login(team.outsider)
    leaks = []
    for path, name in _project_urls(world):
        for method in ("get", "post"):
            # The API's list endpoint names the project in the query when read with a session.
            res = getattr(client, method)(path, {"project": world["slug"]} if method == "get" else {})
            # 401: API and OTLP endpoints that take keys only; 405: a method the URL does not have.
            if res.status_code not in (404, 405) and not (path.startswith(KEY_ONLY) and res.status_code == 401):
                leaks.append(f"{method.upper()} {path} ({name}) -> {res.status_code}")
    assert leaks == []


def test_api_key_of_another_project_reaches_nothing(client, team, world):
    headers = {"Authorization": f"Bearer {team.other_key}"}
    leaks = []
    for path, name in _project_urls(world):
        if not path.startswith("/api/") or "/runs/" not in path:
            continue
        for method in ("get", "post", "patch"):
            body = {} if method == "get" else {"content_type": "application/json", "data": "{}"}
            res = getattr(client, method)(path, headers=headers, **body)
            # A body refused before the run is looked up (422) is no leak only if a run that does
            # not exist gets exactly the same answer.
            ghost = getattr(client, method)(path.replace(world["run_id"], "doesnotexist0000"), headers=headers, **body)
            if res.status_code not in (404, 405, 422) or res.status_code != ghost.status_code:
                leaks.append(f"{method.upper()} {path} ({name}) -> {res.status_code} (unknown run: {ghost.status_code})")
    assert leaks == []


def test_viewer_reads_but_every_write_is_refused(client, team, world):
    client.force_login(team.viewer)
    before = (Run.objects.count(), Rollout.objects.count(), Run.objects.get(public_id=world["run_id"]).updated_at)
    for path, _ in _project_urls(world):
        if path.startswith(KEY_ONLY):
            continue  # the API and OTLP write with keys, not sessions (covered above)
        res = client.post(path, {"name": "x", "status": "cancelled"})
        if _ in OWN_SETTINGS:
            assert res.status_code == 302, f"POST {path} as viewer -> {res.status_code}"
            continue
        # Read pages refuse POST (405); writes a viewer may not make are 404 (or 403).
        assert res.status_code in (404, 405, 403), f"POST {path} as viewer -> {res.status_code}"
    after = (Run.objects.count(), Rollout.objects.count(), Run.objects.get(public_id=world["run_id"]).updated_at)
    assert before == after


def test_anonymous_is_sent_to_login_or_refused(client, world):
    for path, name in _project_urls(world):
        res = client.get(path)
        assert res.status_code in (302, 401, 404, 405), f"GET {path} ({name}) anonymous -> {res.status_code}"
        if res.status_code == 302:
            assert res["Location"].startswith("/login/")
