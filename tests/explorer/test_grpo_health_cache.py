"""The run page's GRPO health is computed once per state of the run's rollouts: a refresh without new
rollouts reads one row of index entries and the cache, a new rollout (or an in-place rebuild) gives a
new answer, and metric points arriving in between (a live run) do not."""

from __future__ import annotations

from typing import Any

import pytest
from django.db import connection
from django.test.utils import CaptureQueriesContext
from django.urls import reverse

from tests.factories import rollout

pytestmark = pytest.mark.django_db


def _health_scans(ctx: CaptureQueriesContext) -> int:
    return sum(1 for q in ctx.captured_queries if "percentile_cont" in q["sql"])


def _run(team: Any) -> Any:
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="cached")
    rollouts_ingest(run=run, rollouts=[rollout(ex, reward=r, step=0, uid=f"0-{ex}-{i}", turns=0)
                                       for ex, rewards in {"A": [0.0, 0.0], "B": [0.0, 1.0]}.items()
                                       for i, r in enumerate(rewards)])
    return run


def test_a_refresh_without_new_rollouts_does_no_rescan(client: Any, team: Any) -> None:
    run = _run(team)
    client.force_login(team.viewer)
    url = reverse("run_health", args=["demo", run.public_id])
    with CaptureQueriesContext(connection) as first:
        one = client.get(url).json()
    assert _health_scans(first) == 1 and one["step"] == [0] and one["frac_dead"] == [0.5]
    with CaptureQueriesContext(connection) as again:
        two = client.get(url).json()
    # The second read: session, user, membership and run as before, then the reward range, the
    # newest rollout id and the rewrite stamp in one query, and no pass over the rollouts.
    assert _health_scans(again) == 0 and two == one
    assert len(again.captured_queries) == len(first.captured_queries) - 1


def test_points_arriving_keep_the_answer(client: Any, team: Any, api: Any) -> None:
    """A live run logs metric points between its rollout batches, and each batch moves the run's
    updated_at (runs.services.run_touch): the open run page's next poll still finds its health."""
    from datetime import timedelta

    from django.utils import timezone

    from deeprepo_web.runs.models import Run

    run = _run(team)
    client.force_login(team.viewer)
    url = reverse("run_health", args=["demo", run.public_id])
    one = client.get(url).json()
    Run.objects.filter(pk=run.pk).update(updated_at=timezone.now() - timedelta(minutes=1))  # a touch is due
    before = Run.objects.get(pk=run.pk).updated_at
    assert api.post(f"/runs/{run.public_id}/metrics", [{"step": 1, "values": {"loss": 0.5}}]).status_code == 200
    assert Run.objects.get(pk=run.pk).updated_at > before  # the points did touch the run
    with CaptureQueriesContext(connection) as ctx:
        two = client.get(url).json()
    assert _health_scans(ctx) == 0 and two == one


def test_a_new_rollout_changes_the_answer(client: Any, team: Any) -> None:
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest

    run = _run(team)
    client.force_login(team.viewer)
    url = reverse("run_health", args=["demo", run.public_id])
    assert client.get(url).json()["rollouts"] == [4]
    rollouts_ingest(run=run, rollouts=[rollout("C", reward=1.0, step=1, uid="1-C-0", turns=0),
                                       rollout("C", reward=1.0, step=1, uid="1-C-1", turns=0)])
    with CaptureQueriesContext(connection) as ctx:
        after = client.get(url).json()
    assert _health_scans(ctx) == 1
    assert after["step"] == [0, 1] and after["rollouts"] == [4, 2] and after["frac_all_pass"][1] == 1.0


def test_a_rebuild_in_place_changes_the_answer(team: Any, django_capture_on_commit_callbacks: Any) -> None:
    """A rollout rebuilt under the same id (OTLP, MLflow traces) keeps the newest id: the rebuild
    moves the run's updated_at, so the next read computes again."""
    from deeprepo_web.explorer.health import grpo_health_cached
    from deeprepo_web.runs.ingest.replace import rollouts_replace

    run = _run(team)
    assert grpo_health_cached(run=run)["mean"] == [pytest.approx(0.25)]
    with django_capture_on_commit_callbacks(execute=True):
        rollouts_replace(run=run, rollouts=[rollout("A", reward=1.0, step=0, uid="0-A-0", turns=0)])
    assert grpo_health_cached(run=run)["mean"] == [pytest.approx(0.5)]


def test_rewards_attached_in_place_change_the_answer(client: Any, team: Any, tmp_path: Any) -> None:
    """SWE-bench results imported later land on the rollouts that produced them by an UPDATE: the
    newest rollout id and the reward range stay, and the run page must still see the new rewards."""
    import json

    from deeprepo_web.importers.pipeline import import_path
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="agent")
    groups = {"x__x-1": [0.0, 0.0], "y__y-2": [1.0, 1.0], "z__z-3": [0.0, 1.0]}
    rollouts_ingest(run=run, rollouts=[rollout(ex, reward=r, step=0, uid=f"{ex}-{i}", turns=0)
                                       for ex, rewards in groups.items() for i, r in enumerate(rewards)])
    client.force_login(team.viewer)
    url = reverse("run_health", args=["demo", run.public_id])
    before = client.get(url).json()
    assert before["mean"] == [pytest.approx(0.5)] and before["frac_all_fail"] == [pytest.approx(1 / 3)]
    summary = tmp_path / "agent.run7.json"  # the evaluation resolved x after all
    summary.write_text(json.dumps({"resolved_ids": ["x__x-1"], "unresolved_ids": [], "schema_version": 2}))
    report = import_path(project=team.project, path=summary)
    assert not report.problems and sum(r.rewards_attached for r in report.runs) == 2
    after = client.get(url).json()
    assert after["mean"] == [pytest.approx(5 / 6)]
    assert after["frac_all_fail"] == [0.0] and after["frac_all_pass"] == [pytest.approx(2 / 3)]
