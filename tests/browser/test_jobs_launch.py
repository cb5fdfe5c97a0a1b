"""Launch Demo GRPO from the form on the local cluster, watch it run and its run get rewards,
then cancel a second job from its page. Real worker, Redis, Chromium, live server."""

from __future__ import annotations

import time
from pathlib import Path
from typing import Any

import pytest

pytestmark = [pytest.mark.browser, pytest.mark.django_db(transaction=True)]


def _reward_points(job_id: str) -> int:
    from deeprepo_web.jobs.models import Job
    from deeprepo_web.runs.models import MetricSeries

    job = Job.objects.get(public_id=job_id)
    series = MetricSeries.objects.filter(run_id=job.run_id, key="reward").first()
    return series.count if series else 0


def _launch_demo(page: Any, base: str, steps: int, sleep: float) -> str:
    page.goto(f"{base}/p/demo/jobs/")
    page.click("text=Demo GRPO")
    page.wait_for_url(f"{base}/p/demo/jobs/new/demo-grpo/")
    page.select_option("select[name=cluster]", label="this machine (local)")
    page.fill("input[name=param_steps]", str(steps))
    page.fill("input[name=param_step_sleep]", str(sleep))
    page.check("input[name=param_no_evals]")
    page.click("button:has-text('Launch')")
    page.wait_for_url(f"{base}/p/demo/jobs/*/")
    return page.url.rstrip("/").rsplit("/", 1)[-1]


def test_launch_demo_grpo_watch_it_succeed_then_cancel_another(
    browser_page: Any, live_server: Any, team: Any, celery_worker: Any, screenshot_dir: str,
    tmp_path: Path,
) -> None:
    from deeprepo_web.jobs.services.clusters import cluster_save

    cluster_save(project=team.project, name="this machine", kind="local", settings_in={
        "state_dir": str(tmp_path / "local-jobs"), "workdir": str(Path(__file__).resolve().parents[2]),
        "deeprepo_url": live_server.url, "kill_grace_s": 2,
    })
    page = browser_page(team.editor)
    base = live_server.url

    # A form error first: out of bounds, named next to its field, nothing launched.
    page.goto(f"{base}/p/demo/jobs/new/demo-grpo/")
    page.fill("input[name=param_steps]", "0")
    page.click("button:has-text('Launch')")
    assert "greater than or equal to 1" in page.inner_text("[data-field=param_steps]")

    job_id = _launch_demo(page, base, steps=12, sleep=0.6)
    page.wait_for_selector("#job-status:has-text('running')", timeout=30_000)
    first = 0
    deadline = time.monotonic() + 30
    while (first := _reward_points(job_id)) < 2 and time.monotonic() < deadline:
        time.sleep(0.3)
    assert first >= 2
    page.screenshot(path=f"{screenshot_dir}/job-running.png", full_page=True)
    page.wait_for_selector("#job-status:has-text('succeeded')", timeout=60_000)
    assert _reward_points(job_id) == 12 > first  # the curve grew while we watched
    assert "step  11" in page.inner_text("#job-log")
    assert page.locator("#job-live[data-live-url]").count() == 0  # polling stopped
    page.click("text=Open run →")
    page.wait_for_url(f"{base}/p/demo/runs/*/")
    assert "finished" in page.inner_text("#run-status")

    other = _launch_demo(page, base, steps=200, sleep=2)
    page.wait_for_selector("#job-status:has-text('running')", timeout=30_000)
    # Cancel asks first: saying no leaves the job running.
    asked: list[str] = []
    page.once("dialog", lambda d: (asked.append(d.message), d.dismiss()))
    page.click("button:has-text('Cancel job')")
    time.sleep(2.5)  # longer than the page's 2 s refresh
    assert asked and "Cancel" in asked[0] and "this machine" in asked[0]
    assert "running" in page.inner_text("#job-status")
    page.once("dialog", lambda d: d.accept())
    page.click("button:has-text('Cancel job')")
    page.wait_for_selector("#job-status:has-text('cancelled')", timeout=30_000)
    page.screenshot(path=f"{screenshot_dir}/job-cancelled.png", full_page=True)
    assert "cancel requested by editor" in page.inner_text("table.events")
    page.goto(f"{base}/p/demo/jobs/")
    rows = page.inner_text("table.jobs")
    assert "succeeded" in rows and "cancelled" in rows
    page.screenshot(path=f"{screenshot_dir}/jobs-list.png", full_page=True)
    assert other != job_id
    # The only console line allowed: Chromium reporting the deliberate 422 of the bad form.
    assert [e for e in page.watched.errors if "status of 422" not in e] == []


def test_launch_form_shows_only_the_chosen_clusters_resources(
    browser_page: Any, live_server: Any, team: Any, tmp_path: Path, screenshot_dir: str,
) -> None:
    from deeprepo_web.jobs.services.clusters import cluster_save

    cluster_save(project=team.project, name="this machine", kind="local",
                 settings_in={"state_dir": str(tmp_path / "local-jobs")})
    cluster_save(project=team.project, name="hpc", kind="slurm", settings_in={})
    cluster_save(project=team.project, name="ray-head", kind="ray", settings_in={"address": "http://127.0.0.1:9"})
    page = browser_page(team.editor)
    page.goto(f"{live_server.url}/p/demo/jobs/new/demo-grpo/")

    def shown() -> set[str]:
        return {el.get_attribute("name") for el in page.locator("#launch-resources [name]").all() if el.is_visible()}

    page.select_option("select[name=cluster]", label="this machine (local)")
    assert shown() == {"res_gpus"}  # CUDA_VISIBLE_DEVICES, checked against this machine's GPUs
    page.select_option("select[name=cluster]", label="hpc (slurm)")
    assert shown() == {"res_partition", "res_nodes", "res_gpus", "res_cpus", "res_mem", "res_time_limit",
                       "res_account"}
    page.screenshot(path=f"{screenshot_dir}/launch-slurm.png", full_page=True)
    page.select_option("select[name=cluster]", label="ray-head (ray)")
    assert shown() == {"res_cpus", "res_gpus", "res_ray_resources"}
    assert page.watched.errors == []


def test_a_hidden_resource_is_dropped_not_an_error(team: Any, tmp_path: Path) -> None:
    from deeprepo_web.jobs.forms import LaunchForm
    from deeprepo_web.jobs.selectors import template_get
    from deeprepo_web.jobs.services.clusters import cluster_save
    from deeprepo_web.jobs.services.templates import builtin_templates_ensure

    builtin_templates_ensure()
    local = cluster_save(project=team.project, name="here", kind="local",
                         settings_in={"state_dir": str(tmp_path / "local-jobs")})
    slurm = cluster_save(project=team.project, name="hpc", kind="slurm", settings_in={})
    template = template_get(project=team.project, slug="demo-grpo")
    # Typed while Slurm was chosen, then the user picked this machine: those fields were hidden.
    typed = {"cluster": str(local.pk), "res_partition": "gpu", "res_nodes": "-1", "param_steps": "3"}
    form = LaunchForm(typed, template=template, clusters=[local, slurm])
    assert form.is_valid(), form.errors
    assert all(v is None for v in form.resources().values())
    form = LaunchForm({**typed, "cluster": str(slurm.pk)}, template=template, clusters=[local, slurm])
    assert not form.is_valid() and "res_nodes" in form.errors  # shown for Slurm: still checked
    form = LaunchForm({**typed, "res_nodes": "1", "cluster": str(slurm.pk)}, template=template,
                      clusters=[local, slurm])
    assert form.is_valid() and form.resources()["partition"] == "gpu"
