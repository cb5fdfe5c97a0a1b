"""Issue 26 item 7: a trajectory's turn count says what it counts, the same way on every page. A
rollout's num_turns counts the model's turns (vf-eval's convention); its trajectory lists all turns,
user and tool ones too. Pages showing the first say "model turns"; pages listing turns also say how
many there are in all."""

from __future__ import annotations

import re
from typing import Any

import pytest
from django.urls import reverse

from deeprepo_web.reports import services as reports
from deeprepo_web.runs.services import run_create
from deeprepo_web.sharing.services import share_create
from tests.trajectories.conftest import ingest

pytestmark = pytest.mark.django_db


def _record(uid: str, reward: float, sample: int) -> dict[str, Any]:
    turns: list[dict[str, Any]] = [{"role": "user", "content": "Audit the repository."}]
    for i in range(3):  # three model turns, the first two answered by a tool and the user: 8 turns in all
        turns.append({"role": "assistant", "content": f"step {i}"})
        if i < 2:
            turns += [{"role": "tool", "content": f"output {i}"}, {"role": "user", "content": "go on"}]
    return {"uid": uid, "example_key": "ex-turns", "step": None, "sample_index": sample, "reward": reward,
            "turns": turns}


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


def test_every_page_names_the_count_it_shows(client: Any, team: Any) -> None:
    run, _ = run_create(project=team.project, name="turny", kind="eval")
    ids = ingest(run, [_record("a", 1.0, 0), _record("b", 0.0, 1)])
    a, b = ids["a"], ids["b"]
    from deeprepo_web.runs.models import Rollout, Turn

    rollout = Rollout.objects.get(pk=a)
    assert rollout.num_turns == 3 and Turn.objects.filter(rollout=rollout).count() == 8
    client.force_login(team.viewer)

    page = _text(client.get(reverse("trajectory", args=["demo", run.public_id, a])).content.decode())
    assert "model turns 3" in page and "all turns 8" in page
    ex = client.get(reverse("example", args=["demo", rollout.example_id])).content.decode()
    assert "Model turns</th>" in ex and ">Turns<" not in ex
    both = _text(client.get(reverse("example_compare", args=["demo", rollout.example_id]) + f"?a={a}&b={b}").content.decode())
    assert both.count("model turns 3") == 2 and both.count("all turns 8") == 2
    table = client.get(reverse("rollouts", args=["demo", run.public_id])).content.decode()
    assert ">Model<br>turns</a></th>" in table
    run_page = _text(client.get(reverse("run", args=["demo", run.public_id])).content.decode())
    assert "model turns / rollout 3" in run_page

    # A report's excerpt and the shared rollout (logged out) say both counts the same way.
    report = reports.report_create(project=team.project, user=team.editor, title="t", blocks=[
        {"kind": "excerpt", "params": {"run": run.public_id, "rollout": str(a), "turns": "1-3"}}])
    draft = _text(client.get(f"/p/demo/reports/{report.public_id}/").content.decode())
    assert "3 model turns, 8 turns in all" in draft
    _, token = share_create(project=team.project, user=team.editor, kind="rollout", target=str(a))
    client.logout()
    shared = _text(client.get(f"/s/{token}").content.decode())
    assert "Model turns 3" in shared and "All turns 8" in shared and "Only the first" not in shared
