"""Jobs on the local cluster through a real Celery worker (Redis) and beat."""

from __future__ import annotations

import json
import os
import signal
from pathlib import Path
from typing import Any

import pytest

from tests.backends.helpers import hostile_values
from tests.jobs.conftest import builtin, wait_for, wait_job

pytestmark = pytest.mark.django_db(transaction=True)


def test_probe_job_runs_to_success_with_run_mirrored_and_key_revoked(
    team: Any, local_cluster: Any, probe_template: Any, launch: Any, work: Path
) -> None:
    out = work / "probe.json"
    job = launch(probe_template, local_cluster, {"out": str(out), "sleep": 1.5, "first": "a", "second": "b"})
    assert job.status == "pending" and job.run.status == "queued"
    job = wait_job(job, "running", timeout=20)
    job.run.refresh_from_db()
    assert job.run.status == "running"
    record = json.loads(wait_for(lambda: out.exists() and out.read_text(), what="probe output"))
    # The job's environment points the client at this server and this run, with a live key.
    assert record["env"]["DEEPREPO_RUN_ID"] == job.run.public_id
    assert record["env"]["DEEPREPO_PROJECT"] == "demo"
    assert record["env"]["DEEPREPO_API_KEY"].startswith("drk_")
    from deeprepo_web.accounts.access import api_key_from_secret

    key = api_key_from_secret(record["env"]["DEEPREPO_API_KEY"])
    assert key is not None and key.project_id == team.project.id
    assert "DATABASE_URL" not in os.environ or "DATABASE_URL" not in record["env"]

    job = wait_job(job, "succeeded", timeout=30)
    assert job.exit_code == 0
    assert "probe done" in wait_for(lambda: (job.refresh_from_db(), job.log_tail)[1], what="log tail")
    job.run.refresh_from_db()
    assert job.run.status == "finished" and job.run.finished_at is not None
    # The key died with the job.
    assert api_key_from_secret(record["env"]["DEEPREPO_API_KEY"]) is None
    transitions = [(e.from_status, e.to_status) for e in job.events.all()]
    assert transitions[:3] == [("", "pending"), ("pending", "submitting"), ("submitting", "queued")]
    assert ("queued", "running") in transitions or ("submitting", "queued") in transitions
    assert transitions[-1][1] == "succeeded"


def test_failing_command_fails_with_exit_code_and_log_tail(
    local_cluster: Any, probe_template: Any, launch: Any, work: Path
) -> None:
    job = launch(probe_template, local_cluster, {"out": str(work / "p.json"), "exit_code": 3, "first": "x"})
    job = wait_job(job, "failed", timeout=30)
    assert job.exit_code == 3
    assert "exit" in job.error and "3" in job.error
    assert "probe stderr line" in job.log_tail and "probe done" in job.log_tail
    job.run.refresh_from_db()
    assert job.run.status == "failed"
    last = job.events.last()
    assert last.to_status == "failed" and "3" in last.reason


def test_cancel_stops_a_running_job(team: Any, local_cluster: Any, probe_template: Any, launch: Any,
                                    work: Path) -> None:
    from deeprepo_web.jobs.services.launch import job_cancel

    out = work / "p.json"
    job = launch(probe_template, local_cluster, {"out": str(out), "sleep": 120})
    wait_job(job, "running", timeout=20)
    pid = json.loads(wait_for(lambda: out.exists() and out.read_text(), what="probe"))["pid"]
    job = job_cancel(job=job, user=team.editor)
    assert job.status == "cancelling"
    job = wait_job(job, "cancelled", timeout=30)
    wait_for(lambda: not Path(f"/proc/{pid}").exists(), timeout=10, what="probe process gone")
    job.run.refresh_from_db()
    assert job.run.status == "cancelled"
    assert any("cancel requested by editor" in e.reason for e in job.events.all())


def test_job_killed_outside_is_noticed(local_cluster: Any, probe_template: Any, launch: Any, work: Path) -> None:
    out = work / "p.json"
    job = launch(probe_template, local_cluster, {"out": str(out), "sleep": 120})
    wait_job(job, "running", timeout=20)
    pid = json.loads(wait_for(lambda: out.exists() and out.read_text(), what="probe"))["pid"]
    os.kill(pid, signal.SIGKILL)  # by hand, behind the dashboard's back
    job = wait_job(job, {"failed", "lost"}, timeout=20)
    assert job.exit_code == 137 and "signal 9" in job.error
    job.run.refresh_from_db()
    assert job.run.status == "failed"


def test_hostile_parameters_reach_the_program_as_inert_data(
    local_cluster: Any, probe_template: Any, launch: Any, work: Path
) -> None:
    canary = work / "canary"
    values = hostile_values(canary)
    out_dir = work / "hostile"
    out_dir.mkdir()
    jobs = []
    for i, value in enumerate(values):
        one_line = value.replace("\n", " ").replace("\r", " ")
        jobs.append((launch(probe_template, local_cluster, {
            "out": str(out_dir / f"{i}.json"), "first": value, "second": one_line,
        }, name=value[:200] or "empty"), value, one_line, i))
    for job, value, one_line, i in jobs:
        wait_job(job, "succeeded", timeout=60)
        record = json.loads((out_dir / f"{i}.json").read_text())
        assert record["argv"] == [value, one_line, "--n", "1"], value
    assert not canary.exists()
    assert (Path.home() / ".").exists()


def test_demo_grpo_logs_rewards_into_the_jobs_run(
    team: Any, local_cluster: Any, launch: Any, live_server: Any
) -> None:
    from deeprepo_web.jobs.services.clusters import cluster_save
    from deeprepo_web.runs.models import MetricSeries

    cluster = cluster_save(project=team.project, name=local_cluster.name, kind="local", cluster=local_cluster,
                           settings_in={**local_cluster.settings, "deeprepo_url": live_server.url})
    job = launch(builtin("demo-grpo"), cluster, {"steps": 6, "step_sleep": 0.2, "no_evals": True})
    job = wait_job(job, "succeeded", timeout=90)
    series = MetricSeries.objects.filter(run=job.run, key="reward").first()
    assert series is not None and series.count == 6, job.log_tail[-2000:]
    job.run.refresh_from_db()
    assert job.run.status == "finished"


def test_eval_outputs_folder_is_recorded_and_handed_to_the_importer(
    team: Any, local_cluster: Any, launch: Any, work: Path
) -> None:
    from deeprepo_web.jobs.services.templates import template_save

    template = template_save(
        project=team.project, slug="fake-eval", name="Fake eval", kind="eval", import_outputs=True,
        command_template="mkdir -p {output_dir} && echo '{{}}' > {output_dir}/results.jsonl && echo {tag}",
        params_schema=[{"name": "tag", "type": "str", "default": "$(touch pwned)"}],
    )
    job = launch(template, local_cluster, {})
    assert job.output_dir == str(work / "outputs" / job.public_id)
    job = wait_job(job, "succeeded", timeout=30)
    assert (Path(job.output_dir) / "results.jsonl").exists()
    assert "$(touch pwned)" in job.log_tail
    assert not (Path(local_cluster.settings["workdir"]) / "pwned").exists()
    # The import note is written just after the transition commits (the import runs outside it).
    notes = wait_for(lambda: [e.reason for e in job.events.all() if e.from_status == e.to_status == "succeeded"],
                     what="the import note")
    assert len(notes) == 1 and job.output_dir in notes[0]
    assert job.run.kind == "eval"


def test_stop_local_jobs_kills_what_this_session_launched(
    local_cluster: Any, probe_template: Any, launch: Any, work: Path
) -> None:
    """What `make run` calls when it stops: the local jobs it launched go, process group and all."""
    from datetime import UTC, datetime
    from io import StringIO

    from django.core.management import call_command

    since = datetime.now(UTC).isoformat()
    out = work / "long.json"
    job = launch(probe_template, local_cluster, {"out": str(out), "sleep": 300, "first": "a", "second": "b"})
    job = wait_job(job, "running", timeout=30)
    meta = json.loads((Path(local_cluster.settings["state_dir"]) / job.external_id / "meta.json").read_text())
    group = int(meta["pid"])
    os.killpg(group, 0)  # alive: signal 0 only checks
    printed = StringIO()
    call_command("stop_local_jobs", "--since", since, stdout=printed)
    assert f"stopped job {job.public_id}" in printed.getvalue()
    job.refresh_from_db()
    assert job.status == "cancelled"

    def gone() -> bool:
        try:
            os.killpg(group, 0)
        except ProcessLookupError:
            return True
        return False

    wait_for(gone, timeout=15, what="the job's process group to be gone")
    # A job created before the session started is not its to stop.
    printed = StringIO()
    call_command("stop_local_jobs", "--since", datetime.now(UTC).isoformat(), stdout=printed)
    assert printed.getvalue() == ""
