"""The sweep pages: the form (and its refusals), the sweep page, cancel all, and who may do what."""

from __future__ import annotations

import re
from typing import Any

import pytest

from deeprepo_web.jobs.models import Job, JobStatus
from deeprepo_web.runs.ingest.metrics import metrics_ingest
from deeprepo_web.sweeps.models import Sweep, Trial
from deeprepo_web.sweeps.services import sweep_advance, sweep_create
from tests.jobs.conftest import builtin

pytestmark = pytest.mark.django_db


def _form(cluster: Any, **over: str) -> dict[str, str]:
    data = {"cluster": str(cluster.pk), "method": "random", "metric": "reward", "direction": "maximize",
            "max_trials": "4", "max_parallel": "2", "pruner": "median", "warmup_steps": "1",
            "startup_trials": "1", "seed": "0", "space_lr": "0.001 .. 0.5 log", "space_steps": "5"}
    data.update(over)
    return data


def test_editor_starts_a_sweep_from_the_form(client: Any, team: Any, local_cluster: Any) -> None:
    client.force_login(team.editor)
    url = f"/p/{team.project.slug}/sweeps/new/demo-grpo/"
    assert 'name="space_lr"' in client.get(url).content.decode()
    res = client.post(url, _form(local_cluster, name="lr search"))
    sweep = Sweep.objects.get()
    assert res.status_code == 302 and res["Location"].endswith(f"/sweeps/{sweep.public_id}/")
    assert sweep.space == {"lr": {"low": 0.001, "high": 0.5, "log": True, "int": False}}
    assert sweep.fixed["steps"] == 5 and sweep.name == "lr search"


@pytest.mark.parametrize(("over", "says"), [
    ({"space_lr": "", "space_steps": ""}, "the parameter space is empty (0 combinations)"),
    ({"method": "grid", "space_lr": "0.1, 0.2", "space_steps": "1 .. 10000", "space_seed": "1, 2"},
     "the grid has 40,000 combinations; at most 10,000"),
    ({"space_lr": "0.5 .. 0.1"}, "the range 0.5 .. 0.1 is empty"),
])
def test_bad_space_is_refused_on_the_form(client: Any, team: Any, local_cluster: Any, over: dict[str, str],
                                          says: str) -> None:
    client.force_login(team.editor)
    res = client.post(f"/p/{team.project.slug}/sweeps/new/demo-grpo/", _form(local_cluster, **over))
    assert res.status_code == 422
    assert says in res.content.decode()
    assert not Sweep.objects.exists()


def test_sweep_page_shows_trials_charts_and_cancels_all(client: Any, team: Any, local_cluster: Any) -> None:
    sweep = sweep_create(project=team.project, template=builtin("demo-grpo"), cluster=local_cluster,
                         specs={"lr": "0.01, 0.1, 0.3", "steps": "4"}, method="grid", metric="reward",
                         max_trials=3, max_parallel=2, user=team.owner)
    sweep_advance(sweep_id=sweep.pk)
    done = Trial.objects.filter(sweep=sweep).select_related("job__run").first()
    assert done is not None and done.job is not None and done.job.run is not None
    metrics_ingest(run=done.job.run, points=[{"step": s, "values": {"reward": 0.2 * s}} for s in range(4)])
    Job.objects.filter(pk=done.job.pk).update(status=JobStatus.SUCCEEDED)
    sweep_advance(sweep_id=sweep.pk)

    client.force_login(team.viewer)
    page = client.get(f"/p/{team.project.slug}/sweeps/{sweep.public_id}/").content.decode()
    assert "1 complete" in page and 'id="sweep-trials"' in page
    assert 'class="chart parcoords"' in page and 'class="trial-line"' in page
    assert "best reward so far" in page
    # The x-axis names its unit under its ticks, not only in the chart's accessible title.
    best = page.split('id="sweep-best-chart"', 1)[1].split("</svg>", 1)[0]
    assert '<text class="axis-name"' in best and ">minutes since the sweep started</text>" in best
    # The best is a step line; each trial is a dot drawn after it, so on top (a trial that is a new
    # best would otherwise hide under the best line).
    assert best.count("<path ") == 1 and re.search(r'<path d="M[^"]*"', best)
    assert best.index("<path ") < best.index('<g class="dots"')
    assert best.split('<g class="dots"', 1)[1].count("<circle ") == 1  # the one complete trial
    # Parallel coordinates: lr's middle category is labelled over the lines (drawn after them), its
    # ends above and below the axis, where no line runs.
    par = page.split('class="chart parcoords"', 1)[1].split("</svg>", 1)[0]
    assert par.rindex('class="trial-line"') < par.index('<text class="tick inner"')
    assert re.search(r'<text class="tick inner" [^>]*>0.1</text>', par)
    assert re.search(r'<text class="tick" x="70.0" y="18" text-anchor="middle">0.3</text>', par)
    assert "<code>0.01, 0.1, 0.3</code>" in page  # the space as written
    assert "Cancel all" not in page  # a viewer reads, never cancels
    assert client.post(f"/p/{team.project.slug}/sweeps/{sweep.public_id}/cancel/").status_code in (403, 404)

    client.force_login(team.editor)
    assert "Cancel all" in client.get(f"/p/{team.project.slug}/sweeps/{sweep.public_id}/").content.decode()
    res = client.post(f"/p/{team.project.slug}/sweeps/{sweep.public_id}/cancel/", follow=True)
    assert "Sweep cancelled: 2 open trials cancelled." in res.content.decode()
    sweep.refresh_from_db()
    assert sweep.status == "cancelled"
    assert list(Trial.objects.filter(sweep=sweep).values_list("status", flat=True)) == [
        "complete", "cancelled", "cancelled"]
    listing = client.get(f"/p/{team.project.slug}/sweeps/").content.decode()
    assert sweep.name in listing


def test_outsider_gets_404(client: Any, team: Any, local_cluster: Any) -> None:
    sweep = sweep_create(project=team.project, template=builtin("demo-grpo"), cluster=local_cluster,
                         specs={"lr": "0.01, 0.1"}, method="grid", metric="reward", max_trials=2, max_parallel=1)
    client.force_login(team.outsider)
    for path in (f"/p/{team.project.slug}/sweeps/{sweep.public_id}/", f"/p/{team.project.slug}/sweeps/"):
        assert client.get(path).status_code == 404
    assert client.post(f"/p/{team.project.slug}/sweeps/{sweep.public_id}/cancel/").status_code == 404
