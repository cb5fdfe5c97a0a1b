"""The run page: live state, facts, config, evals of checkpoints, chart config, overlays."""

from __future__ import annotations

import json
import re
from typing import Any

import pytest

pytestmark = pytest.mark.django_db


def chart_config(html: str) -> dict[str, Any]:
    m = re.search(r'<script id="chart-config" type="application/json">(.*?)</script>', html, re.S)
    assert m is not None
    return json.loads(m.group(1))


def test_live_state_follows_points_rollouts_and_the_end(client: Any, team: Any, seeded: Any) -> None:
    from deeprepo_web.runs.ingest.metrics import metrics_ingest
    from deeprepo_web.runs.services import run_finish

    client.force_login(team.viewer)
    url = f"/p/demo/runs/{seeded.beta.public_id}/live/"
    first = client.get(url).json()
    assert first["status"] == "running" and first["final"] is False and first["last_step"] == 2
    assert first["keys"] == 2 and first["points"] == 6 and first["rollout"] is None
    assert 'id="run-status"' in first["header"]
    metrics_ingest(run=seeded.beta, points=[{"step": 3, "values": {"reward": 1.0, "kl": 0.1}}])
    second = client.get(url).json()
    assert second["last_step"] == 3 and second["keys"] == 3 and second["points"] == 8
    metrics_ingest(run=seeded.beta, points=[{"step": 3, "values": {"eval/acc": 0.5}}])  # late, same step
    assert client.get(url).json()["points"] == 9
    run_finish(run=seeded.beta)
    assert client.get(url).json()["final"] is True
    client.force_login(team.outsider)
    assert client.get(url).status_code == 404


def test_page_shows_facts_config_and_evals(client: Any, team: Any, seeded: Any) -> None:
    client.force_login(team.viewer)
    html = client.get(f"/p/demo/runs/{seeded.alpha.public_id}/").content.decode()
    assert "<h1>alpha-grpo</h1>" in html
    assert chart_config(html)["live"]["final"] is True  # finished: the page does not poll
    assert '"optim": {"name": "adamw"}' in html  # config through json_script
    assert f'/p/demo/runs/{seeded.evalrun.public_id}/' in html and "Evals of checkpoints" in html
    cfg = chart_config(html)
    assert cfg["run"] == {"id": seeded.alpha.public_id, "name": "alpha-grpo"}
    assert [k["key"] for k in cfg["keys"]] == ["loss/policy", "reward"]
    assert cfg["healthUrl"] == f"/p/demo/runs/{seeded.alpha.public_id}/health/"
    assert "vendor/uplot-1.6.32.min.js" in html and "js/charts.js" in html
    eval_html = client.get(f"/p/demo/runs/{seeded.evalrun.public_id}/").content.decode()
    assert f'/p/demo/runs/{seeded.alpha.public_id}/' in eval_html and "@ step 300" in eval_html


def test_running_page_polls(client: Any, team: Any, seeded: Any) -> None:
    client.force_login(team.viewer)
    html = client.get(f"/p/demo/runs/{seeded.beta.public_id}/").content.decode()
    cfg = chart_config(html)
    assert cfg["liveUrl"] == f"/p/demo/runs/{seeded.beta.public_id}/live/" and cfg["live"]["final"] is False
    assert "js/live.js" in html


def test_overlay_keeps_readable_runs_only(client: Any, team: Any, seeded: Any) -> None:
    from deeprepo_web.runs.services import run_create

    foreign, _ = run_create(project=team.other_project, name="secret-run")
    client.force_login(team.viewer)
    ids = ",".join([seeded.beta.public_id, foreign.public_id, "nope", seeded.beta.public_id])
    html = client.get(f"/p/demo/runs/{seeded.alpha.public_id}/", {"overlay": ids}).content.decode()
    beta = seeded.beta.public_id
    assert chart_config(html)["overlay"] == [{"id": beta, "name": "beta-grpo", "healthUrl": f"/p/demo/runs/{beta}/health/"}]
    assert "secret-run" not in html


def test_hostile_run_text_is_escaped(client: Any, team: Any) -> None:
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="</script><script>alert(1)</script>",
                        config={"x": "</script><script>alert(2)</script>"})
    client.force_login(team.owner)
    html = client.get(f"/p/demo/runs/{run.public_id}/").content.decode()
    assert "<script>alert(" not in html


def test_health_endpoint_returns_per_step_json(client: Any, team: Any, seeded: Any) -> None:
    client.force_login(team.viewer)
    body = client.get(f"/p/demo/runs/{seeded.alpha.public_id}/health/").json()
    assert body["step"] == [0] and body["groups"] == [2] and body["rollouts"] == [4]
