"""A verl agent-loop rollout on its trajectory page: turns with tool calls, an "inferred" badge and
the raw text one click away (issue 25, item 2)."""

from __future__ import annotations

import json
import os
from typing import Any

import pytest

from tests.formats.test_verl_agent_loop import AGENT_OUTPUT

pytestmark = pytest.mark.django_db(transaction=True)


def _import(team: Any, tmp_path: Any) -> Any:
    from deeprepo_web.importers.pipeline import import_path
    from deeprepo_web.runs.models import Rollout

    d = tmp_path / "rollout_data"
    d.mkdir()
    row = {"input": "user\nNatalia sold clips...\nassistant\n", "output": AGENT_OUTPUT, "gts": "72", "score": 1.0, "step": 1}
    (d / "1.jsonl").write_text(json.dumps(row) + "\n")
    report = import_path(project=team.project, path=d)
    assert not report.problems, report.problems
    return Rollout.objects.select_related("run").get(run__project=team.project)


def test_inferred_turns_show_calls_badge_and_raw_text(browser_page: Any, live_server: Any, team: Any,
                                                      tmp_path: Any, screenshot_dir: str) -> None:
    rollout = _import(team, tmp_path)
    assert rollout.num_turns == 3 and rollout.final_answer == "The answer is #### 72"
    page = browser_page(team.viewer)
    page.goto(f"{live_server.url}/p/{team.project.slug}/runs/{rollout.run.public_id}/rollouts/{rollout.pk}/")
    badge = page.locator(".badge.inferred")
    assert badge.count() == 1 and "inferred" in badge.inner_text()
    assert "split from the text" in (badge.get_attribute("title") or "")
    assert page.locator(".turn.role-assistant").count() == 3
    assert page.get_by_text("calc_gsm8k_reward").count() >= 2
    raw = page.locator("details.tj-raw")
    assert not raw.locator("pre").is_visible()
    raw.locator("summary").click()
    assert raw.locator("pre").inner_text().strip() == AGENT_OUTPUT.strip()
    os.makedirs("/work/notes/screens/newdata", exist_ok=True)
    page.screenshot(path=os.path.join(screenshot_dir, "trajectory-inferred.png"), full_page=True)
    page.screenshot(path="/work/notes/screens/newdata/trajectory-inferred.png", full_page=True)
    assert page.watched.errors == []
