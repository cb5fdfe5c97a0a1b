"""Job and cluster pages: access, bad input, secrets never shown. No worker needed: with the
`db` fixture the launch's on-commit dispatch never fires."""

from __future__ import annotations

import re
from typing import Any

import pytest

from deeprepo_web.jobs.models import Cluster, Job, JobTemplate
from deeprepo_web.jobs.services.workers import queue_is_live

pytestmark = pytest.mark.django_db

PRIVATE_KEY_MARK = "AAAAC3NzaC1lZDI1NTE5AAAA-secret-body"


@pytest.fixture
def cluster(team: Any, tmp_path: Any) -> Cluster:
    from deeprepo_web.jobs.services.clusters import cluster_save

    return cluster_save(project=team.project, name="here", kind="local",
                        settings_in={"state_dir": str(tmp_path / "jobs")})


def _login(client: Any, user: Any) -> Any:
    client.force_login(user)
    return client


def _launch_url(slug: str = "demo-grpo") -> str:
    return f"/p/demo/jobs/new/{slug}/"


def _post_demo(client: Any, cluster_row: Cluster, **over: Any) -> Any:
    data = {"cluster": str(cluster_row.pk), "job_name": "my run", "param_steps": "5", "param_step_sleep": "0",
            "param_seed": "1", "param_lr": "0.05", "param_examples_per_step": "4",
            "param_rollouts_per_example": "4"}
    data.update(over)
    return client.post(_launch_url(), data)


def test_outsider_gets_404_everywhere(client: Any, team: Any, cluster: Cluster) -> None:
    from deeprepo_web.jobs.services.launch import job_launch
    from deeprepo_web.jobs.services.templates import templates_for_project

    demo = next(t for t in templates_for_project(team.project) if t.slug == "demo-grpo")
    job = job_launch(project=team.project, template=demo, cluster=cluster, params={}, user=team.owner)
    _login(client, team.outsider)
    for url in ("/p/demo/jobs/", _launch_url(), f"/p/demo/jobs/{job.public_id}/", "/p/demo/clusters/",
                f"/p/demo/clusters/{cluster.pk}/", "/p/demo/jobs/templates/new/"):
        assert client.get(url).status_code == 404, url
    assert client.post(f"/p/demo/jobs/{job.public_id}/cancel/").status_code == 404
    assert _post_demo(client, cluster).status_code == 404
    assert Job.objects.count() == 1


def test_viewer_reads_but_cannot_launch_or_cancel(client: Any, team: Any, cluster: Cluster) -> None:
    from deeprepo_web.jobs.services.launch import job_launch
    from deeprepo_web.jobs.services.templates import templates_for_project

    demo = next(t for t in templates_for_project(team.project) if t.slug == "demo-grpo")
    job = job_launch(project=team.project, template=demo, cluster=cluster, params={}, user=team.owner)
    _login(client, team.viewer)
    page = client.get("/p/demo/jobs/")
    assert page.status_code == 200 and job.name in page.content.decode()
    assert "Launch" not in page.content.decode().split("<h2>Jobs</h2>")[0].split("</nav>")[-1]
    detail = client.get(f"/p/demo/jobs/{job.public_id}/")
    assert detail.status_code == 200 and "Cancel job" not in detail.content.decode()
    assert client.get(_launch_url()).status_code == 404
    assert _post_demo(client, cluster).status_code == 404
    assert client.post(f"/p/demo/jobs/{job.public_id}/cancel/").status_code == 404
    job.refresh_from_db()
    assert job.status == "pending"
    assert client.get(f"/p/demo/clusters/{cluster.pk}/").status_code == 404  # admins only
    assert client.get("/p/demo/clusters/").status_code == 200


def test_editor_launches_a_job_and_its_queued_run(client: Any, team: Any, cluster: Cluster) -> None:
    _login(client, team.editor)
    form = client.get(_launch_url())
    assert form.status_code == 200 and "param_steps" in form.content.decode()
    listening = queue_is_live("celery")
    r = _post_demo(client, cluster)
    assert r.status_code == 302
    job = Job.objects.get()
    assert r["Location"] == f"/p/demo/jobs/{job.public_id}/"
    assert job.status == "pending" and job.created_by == team.editor
    assert job.run is not None and job.run.status == "queued" and job.run.name == "my run"
    assert job.command.startswith("python -m workers.demo_grpo --steps 5 --step-sleep 0.0 --seed 1")
    # Without a worker on the default queue (this test starts none; one may linger from another
    # test), the job says it waits for one instead of looking stuck.
    assert [(e.to_status, e.reason) for e in job.events.all()][1:] == ([] if listening else [
        ("pending", f"waiting for a worker on {cluster.name} (no worker listens on queue 'celery')")])
    page = client.get(r["Location"])
    assert 'data-live-url="{}" data-live-every="2"'.format(r["Location"]) in page.content.decode()
    # A poll of a live job keeps polling (200); a finished one comes back without data-live-url (286).
    assert client.get(r["Location"], headers={"HX-Request": "true"}).status_code == 200
    Job.objects.filter(pk=job.pk).update(status="succeeded")
    done = client.get(r["Location"], headers={"HX-Request": "true"})
    assert done.status_code == 286 and "data-live-url" not in done.content.decode()


def test_editor_cancels_a_pending_job(client: Any, team: Any, cluster: Cluster) -> None:
    _login(client, team.editor)
    _post_demo(client, cluster)
    job = Job.objects.get()
    r = client.post(f"/p/demo/jobs/{job.public_id}/cancel/")
    assert r.status_code == 302
    job.refresh_from_db()
    assert job.status == "cancelled"
    job.run.refresh_from_db()
    assert job.run.status == "cancelled"
    assert "cancelled by editor before it was submitted" in job.events.last().reason


@pytest.mark.parametrize(("field", "value", "message"), [
    ("param_steps", "0", "greater than or equal to 1"),
    ("param_steps", "100000", "less than or equal to 10000"),
    ("param_steps", "ten", "Enter a whole number"),
    ("param_lr", "nan", "lr"),
    ("res_partition", "gpu; rm -rf ~", "partition"),
    ("res_time_limit", "$(reboot)", "time_limit"),
    ("res_gpus", "-1", "greater than or equal to 0"),
    ("res_ray_resources", "A100", "name=amount"),
    ("cluster", "999999", "Select a valid choice"),
])
def test_out_of_schema_input_is_a_422_naming_the_field(client: Any, team: Any, cluster: Cluster, field: str,
                                                      value: str, message: str) -> None:
    from deeprepo_web.jobs.services.clusters import cluster_save

    _login(client, team.editor)
    if field.startswith("res_"):  # a cluster that reads this resource (the form drops the others' fields)
        cluster = cluster_save(project=team.project, name="ray", kind="ray", settings_in={"address": "http://127.0.0.1:9"}) \
            if field == "res_ray_resources" else cluster_save(project=team.project, name="hpc", kind="slurm", settings_in={})
    r = _post_demo(client, cluster, **{field: value})
    assert r.status_code == 422
    html = r.content.decode()
    errors = re.findall(r'<div class="error" data-field="([^"]+)">([^<]*)<', html)
    assert errors, html[:2000]
    assert any(name == field for name, _ in errors), errors
    assert any(message.lower() in text.lower() or message in name for name, text in errors), errors
    assert Job.objects.count() == 0 and not team.project.runs.exists()


def test_service_rejects_parameters_outside_the_schema(team: Any, cluster: Cluster) -> None:
    from deeprepo_web.jobs.services.errors import JobInputError
    from deeprepo_web.jobs.services.launch import job_launch
    from deeprepo_web.jobs.services.templates import templates_for_project

    demo = next(t for t in templates_for_project(team.project) if t.slug == "demo-grpo")
    for params, field in (({"steps": 0}, "steps"), ({"steps": True}, "steps"), ({"bogus": 1}, "bogus"),
                          ({"lr": float("inf")}, "lr"), ({"no_evals": "maybe"}, "no_evals")):
        with pytest.raises(JobInputError) as e:
            job_launch(project=team.project, template=demo, cluster=cluster, params=params)
        assert e.value.field == field
    with pytest.raises(JobInputError) as e:
        job_launch(project=team.project, template=demo, cluster=cluster, params={},
                   resources={"account": "a`id`"})
    assert e.value.field == "account"
    assert Job.objects.count() == 0


def test_template_with_unknown_parameter_is_rejected_on_save(client: Any, team: Any) -> None:
    _login(client, team.editor)
    r = client.post("/p/demo/jobs/templates/new/", {
        "slug": "mine", "name": "Mine", "kind": "train", "command_template": "python train.py --lr {lr} {epochs}",
        "params_schema": '[{"name": "lr", "type": "float", "default": 0.1}]',
    })
    assert r.status_code == 422
    assert "references unknown parameter {epochs}" in r.content.decode()
    assert not JobTemplate.objects.filter(slug="mine").exists()
    bad_schema = client.post("/p/demo/jobs/templates/new/", {
        "slug": "mine", "name": "Mine", "kind": "train", "command_template": "x {n}",
        "params_schema": '[{"name": "n", "type": "int", "min": 5, "default": 1}]',
    })
    assert bad_schema.status_code == 422 and "must be ≥ 5" in bad_schema.content.decode()
    ok = client.post("/p/demo/jobs/templates/new/", {
        "slug": "mine", "name": "Mine", "kind": "eval", "command_template": "python train.py --lr {lr} {{literal}}",
        "params_schema": '[{"name": "lr", "type": "float", "default": 0.1, "min": 0}]',
    })
    assert ok.status_code == 302 and ok["Location"] == "/p/demo/jobs/new/mine/"


def test_cluster_secrets_are_encrypted_and_never_shown(client: Any, team: Any, tmp_path: Any) -> None:
    from django.db import connection

    _login(client, team.owner)
    assert client.get("/p/demo/clusters/new/?kind=slurm").status_code == 200
    key = f"-----BEGIN OPENSSH PRIVATE KEY-----\n{PRIVATE_KEY_MARK}\n-----END OPENSSH PRIVATE KEY-----"
    bad = client.post("/p/demo/clusters/new/", {"kind": "slurm", "name": "login", "host": "127.0.0.1",
                                                "user": "me", "known_hosts": "", "private_key": key})
    assert bad.status_code == 422 and "known_hosts for the SSH login node is required" in bad.content.decode()
    assert PRIVATE_KEY_MARK not in bad.content.decode()  # not even echoed back on an error
    r = client.post("/p/demo/clusters/new/", {"kind": "ray", "name": "ray", "address": "http://127.0.0.1:1",
                                              "token": "tok-SECRET-123"})
    assert r.status_code == 302
    cluster = Cluster.objects.get(name="ray")
    with connection.cursor() as cur:
        cur.execute("SELECT secrets_token, settings::text FROM jobs_cluster WHERE id = %s", [cluster.pk])
        raw_token, raw_settings = cur.fetchone()
    assert "tok-SECRET-123" not in raw_token + raw_settings
    assert cluster.get_secrets() == {"token": "tok-SECRET-123"}
    page = client.get(f"/p/demo/clusters/{cluster.pk}/").content.decode()
    assert "tok-SECRET-123" not in page and "stored; type to replace" in page
    # Saving without typing a token keeps the stored one; typing replaces it.
    client.post(f"/p/demo/clusters/{cluster.pk}/", {"kind": "ray", "name": "ray", "address": "http://127.0.0.1:2"})
    cluster.refresh_from_db()
    assert cluster.get_secrets() == {"token": "tok-SECRET-123"} and cluster.settings["address"] == "http://127.0.0.1:2"
    client.post(f"/p/demo/clusters/{cluster.pk}/", {"kind": "ray", "name": "ray", "address": "http://127.0.0.1:2",
                                                    "token": "new-token"})
    cluster.refresh_from_db()
    assert cluster.get_secrets() == {"token": "new-token"}


def test_test_connection_button_shows_the_verdict(client: Any, team: Any, cluster: Cluster) -> None:
    from deeprepo_web.jobs.services.clusters import cluster_save

    _login(client, team.owner)
    r = client.post(f"/p/demo/clusters/{cluster.pk}/test/", headers={"HX-Request": "true"})
    assert r.status_code == 200 and "local machine" in r.content.decode() and "ok" in r.content.decode()
    ray = cluster_save(project=team.project, name="dead-ray", kind="ray", settings_in={"address": "http://127.0.0.1:9"})
    r = client.post(f"/p/demo/clusters/{ray.pk}/test/", headers={"HX-Request": "true"})
    assert "failed" in r.content.decode() and "cannot reach Ray head" in r.content.decode()
    assert client.get("/p/demo/clusters/").content.decode().count("status-failed") == 1


def test_editor_cannot_manage_clusters(client: Any, team: Any, cluster: Cluster) -> None:
    _login(client, team.editor)
    assert client.get("/p/demo/clusters/new/?kind=local").status_code == 404
    assert client.post(f"/p/demo/clusters/{cluster.pk}/test/").status_code == 404


def test_job_page_shows_parameters_only_when_there_are_some(client: Any, team: Any, cluster: Cluster) -> None:
    from deeprepo_web.jobs.services.launch import job_launch
    from deeprepo_web.jobs.services.templates import template_save

    bare = template_save(project=team.project, slug="bare", name="Bare", kind="train", command_template="true",
                         params_schema=[])
    job = job_launch(project=team.project, template=bare, cluster=cluster, params={}, user=team.editor)
    page = _login(client, team.viewer).get(f"/p/demo/jobs/{job.public_id}/").content.decode()
    assert "<h2>Parameters" not in page and "<h2>Resources" not in page and ">none<" not in page
    job = job_launch(project=team.project, template=bare, cluster=cluster, params={}, resources={"cpus": 2})
    page = client.get(f"/p/demo/jobs/{job.public_id}/").content.decode()
    assert "<h2>Resources</h2>" in page and "<th>cpus</th><td><code>2</code>" in page
    r = _post_demo(_login(client, team.editor), cluster, res_gpus="0")
    page = client.get(r["Location"]).content.decode()
    assert "<h2>Parameters" in page and "<th>steps</th><td><code>5</code>" in page


def test_template_form_saves_the_retry_policy_and_refuses_a_bad_one(client: Any, team: Any) -> None:
    _login(client, team.editor)
    data = {"slug": "flaky", "name": "Flaky", "kind": "train", "command_template": "true", "params_schema": "[]",
            "max_node_retries": "11"}
    r = client.post("/p/demo/jobs/templates/new/", data)
    assert r.status_code == 422 and "less than or equal to 10" in r.content.decode()
    r = client.post("/p/demo/jobs/templates/new/", {**data, "max_node_retries": "3"})
    assert r.status_code == 302
    template = JobTemplate.objects.get(project=team.project, slug="flaky")
    assert template.max_node_retries == 3
    r = client.get(f"/p/demo/jobs/templates/{template.pk}/")
    assert 'name="max_node_retries"' in r.content.decode() and 'value="3"' in r.content.decode()


def _box(page: str, text: str) -> str:
    """The opening tag of the element whose text starts with `text`."""
    tags = re.findall(r"<p [^>]*>(?=" + re.escape(text) + ")", page)
    assert len(tags) == 1, (text, tags)
    return tags[0]


def test_waiting_for_a_worker_is_a_notice_and_a_failure_is_the_error_box(
        client: Any, team: Any, tmp_path: Any) -> None:
    from deeprepo_web.jobs.services.clusters import cluster_save
    from deeprepo_web.jobs.services.launch import job_launch
    from deeprepo_web.jobs.services.templates import template_save

    bare = template_save(project=team.project, slug="bare", name="Bare", kind="train", command_template="true",
                         params_schema=[])
    # No worker listens on this queue: the launch itself notes the wait on the job.
    lonely = cluster_save(project=team.project, name="lonely", kind="local", queue="nobody-listens-here",
                          settings_in={"state_dir": str(tmp_path / "jobs")})
    waiting = job_launch(project=team.project, template=bare, cluster=lonely, params={}, user=team.editor)
    waiting.refresh_from_db()
    assert waiting.error == "waiting for a worker on lonely (no worker listens on queue 'nobody-listens-here')"
    page = _login(client, team.viewer).get(f"/p/demo/jobs/{waiting.public_id}/").content.decode()
    assert _box(page, "waiting for a worker on lonely") == '<p class="notice job-waiting" role="status" id="job-waiting">'
    assert "job-error" not in page
    # The htmx poll of the same page keeps the notice (the box lives in the polled part).
    part = client.get(f"/p/demo/jobs/{waiting.public_id}/", headers={"HX-Request": "true"}).content.decode()
    assert 'class="notice job-waiting"' in part and "job-error" not in part

    Job.objects.filter(pk=waiting.pk).update(status="failed", error="exit code 3: out of memory")
    page = client.get(f"/p/demo/jobs/{waiting.public_id}/").content.decode()
    assert _box(page, "exit code 3: out of memory") == '<p class="job-error" id="job-error">'
    assert "job-waiting" not in page


def test_dispatch_attempts_show_only_when_a_submit_was_retried(client: Any, team: Any, cluster: Cluster) -> None:
    """The dispatch counter restarts at each node-failure retry: a lone "1" beside "2 of 2 used" read
    as a contradiction, so the facts show it only when the current attempt needed more than one try."""
    from deeprepo_web.jobs.services.launch import job_launch
    from deeprepo_web.jobs.services.templates import template_save

    bare = template_save(project=team.project, slug="bare", name="Bare", kind="train", command_template="true",
                         params_schema=[], max_node_retries=2)
    job = job_launch(project=team.project, template=bare, cluster=cluster, params={}, user=team.editor)
    Job.objects.filter(pk=job.pk).update(status="running", attempts=1, node_retries=2)
    page = _login(client, team.viewer).get(f"/p/demo/jobs/{job.public_id}/").content.decode()
    assert "Dispatch attempts" not in page and "2 of 2 used" in page and "{#" not in page
    Job.objects.filter(pk=job.pk).update(attempts=3)
    page = client.get(f"/p/demo/jobs/{job.public_id}/").content.decode()
    dd = re.search(r'<dd id="job-dispatches">(.*?)</dd>', page)
    assert dd and re.sub(r"<[^>]+>", "", dd.group(1)) == (
        "3 (tries to submit attempt 3 to the cluster; a transient error is retried)")
    Job.objects.filter(pk=job.pk).update(node_retries=0)
    page = client.get(f"/p/demo/jobs/{job.public_id}/").content.decode()
    assert "3 <span class=\"muted\">(tries to submit the job to the cluster;" in page


def test_an_attempt_never_seen_running_says_so_instead_of_a_dash(client: Any, team: Any, cluster: Cluster) -> None:
    """An attempt that went queued → succeeded between two state syncs has no start time: the
    Attempts table says it was not seen running, and shows no made-up time."""
    from django.utils import timezone

    from deeprepo_web.jobs.models import JobAttempt
    from deeprepo_web.jobs.services.launch import job_launch
    from deeprepo_web.jobs.services.templates import template_save

    bare = template_save(project=team.project, slug="bare", name="Bare", kind="train", command_template="true",
                         params_schema=[], max_node_retries=1)
    job = job_launch(project=team.project, template=bare, cluster=cluster, params={}, user=team.editor)
    now = timezone.now()
    JobAttempt.objects.create(job=job, number=1, external_id="x-1", submitted_at=now, started_at=now,
                              finished_at=now, state="lost", reason="node died")
    JobAttempt.objects.create(job=job, number=2, external_id="x-2", submitted_at=now, finished_at=now,
                              state="succeeded")
    JobAttempt.objects.create(job=job, number=3, external_id="x-3", submitted_at=now)
    page = _login(client, team.viewer).get(f"/p/demo/jobs/{job.public_id}/").content.decode()
    started = [re.sub(r"<[^>]+>", "", c).strip() for c in re.findall(r'<td class="nowrap attempt-started"[^>]*>(.*?)</td>', page)]
    assert started == [timezone.localtime(now).strftime("%H:%M:%S"), "not seen running", "—"]
