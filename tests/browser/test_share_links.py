"""Share links in Chromium: creation by an editor, what an anonymous visitor sees, and every way a
link stops working (revoked, expired, wrong token, deleted target) answering 404."""

from __future__ import annotations

import json
import os
import re
from datetime import timedelta
from typing import Any

import pytest
from django.utils import timezone

from deeprepo_web.runs.models import Run
from deeprepo_web.sharing.models import ShareLink, token_hash
from deeprepo_web.sharing.services import share_create
from tests.compare.patches import swebench_rollout
from tests.compare.seed002 import seed_002

pytestmark = pytest.mark.django_db(transaction=True)


def _anon(browser_page: Any) -> Any:
    return browser_page(None)


def _runs(s: dict[str, Any]) -> list[Any]:
    return [s["Qwen3-8B (untrained)"], s["Qwen3-30B-A3B (untrained)"], s["Qwen3-30B-A3B (GRPO trained)"]]


def test_editor_shares_a_comparison_and_anonymous_sees_only_it(
    browser_page: Any, live_server: Any, team: Any, screenshot_dir: str
) -> None:
    s = seed_002(team.project)
    runs = _runs(s)
    page = browser_page(team.editor)
    page.goto(f"{live_server.url}/p/demo/compare/?runs={','.join(r.public_id for r in runs)}"
              f"&baseline={runs[1].public_id}&effects=A>B:Model size effect;B>C:RL training effect;A>C:Combined")
    page.click("summary:has-text('Share…')")
    page.fill("input[name=title]", "GRPO on deeprepo-orchestration: before / after")
    page.click("button:has-text('Create read-only link')")
    url = page.input_value("#share-url")
    assert re.fullmatch(rf"{re.escape(live_server.url)}/s/[A-Za-z0-9_-]{{43}}", url)
    token = url.rsplit("/", 1)[1]
    link = ShareLink.objects.get()
    assert link.token_hash == token_hash(token) and token not in (link.token_hash, link.token_prefix + "x")

    anon = _anon(browser_page)
    resp = anon.goto(url)
    assert resp.status == 200
    assert "noindex" in resp.headers["x-robots-tag"]
    assert anon.locator("meta[name=robots]").get_attribute("content").startswith("noindex")
    text = anon.inner_text("body")
    assert "0.785 (σ 0.100)" in text and "+25.7%" in text and "RL training effect" in text
    assert "Demo" not in text  # the project's name is not shown
    hrefs = anon.eval_on_selector_all("a", "els => els.map(e => e.getAttribute('href'))")
    assert hrefs == []
    assert anon.locator("form").count() == 0  # no edit controls
    anon.wait_for_timeout(200)
    anon.screenshot(path=os.path.join(screenshot_dir, "share_comparison.png"), full_page=True)
    assert anon.watched.errors == []
    ShareLink.objects.filter(pk=link.pk).update()
    link.refresh_from_db()
    assert link.views == 1

    # The owner lists and revokes it; the link then answers 404.
    page.goto(f"{live_server.url}/p/demo/shares/")
    assert "GRPO on deeprepo-orchestration" in page.inner_text("table")
    page.click("button:has-text('Revoke')")
    assert "revoked" in page.inner_text("table")
    assert anon.goto(url).status == 404


def test_dead_links_are_404(browser_page: Any, live_server: Any, team: Any) -> None:
    s = seed_002(team.project, with_training=False)
    run = s["Qwen3-8B (untrained)"]
    expired, t_expired = share_create(project=team.project, user=team.owner, kind="run", target=run.public_id,
                                      expires_in_days=1)
    ShareLink.objects.filter(pk=expired.pk).update(expires_at=timezone.now() - timedelta(seconds=1))
    revoked, t_revoked = share_create(project=team.project, user=team.owner, kind="run", target=run.public_id)
    ShareLink.objects.filter(pk=revoked.pk).update(revoked_at=timezone.now())
    _, t_live = share_create(project=team.project, user=team.owner, kind="run", target=run.public_id)
    doomed = Run.objects.create(project=team.project, name="to be deleted", kind="eval")
    _, t_doomed = share_create(project=team.project, user=team.owner, kind="run", target=doomed.public_id)
    doomed.delete()
    anon = _anon(browser_page)
    for token in (t_expired, t_revoked, t_live[:-1] + ("A" if t_live[-1] != "A" else "B"), t_doomed, "x" * 300, ""):
        resp = anon.goto(f"{live_server.url}/s/{token}")
        assert resp.status == 404, token
    # The hash is not a token: knowing the stored value does not open the link.
    assert anon.goto(f"{live_server.url}/s/{ShareLink.objects.get(revoked_at=None, expires_at=None).token_hash}"
                     ).status == 404
    ok = anon.goto(f"{live_server.url}/s/{t_live}")
    assert ok.status == 200 and "Qwen3-8B (untrained)" in anon.inner_text("h1")


def test_token_of_another_object_shows_only_its_own(browser_page: Any, live_server: Any, team: Any,
                                                     screenshot_dir: str) -> None:
    s = seed_002(team.project, with_training=False)
    rollout = swebench_rollout(team.project)
    _, t_rollout = share_create(project=team.project, user=team.owner, kind="rollout", target=str(rollout.pk))
    _, t_example = share_create(project=team.project, user=team.owner, kind="example",
                                target=str(rollout.example_id))
    other_run = s["Qwen3-8B (untrained)"]
    anon = _anon(browser_page)
    # Share pages take no object ids: a token for one object never reaches another.
    for path in (f"/s/{t_rollout}/{other_run.public_id}", f"/s/{t_rollout}/runs/{other_run.public_id}/",
                 f"/p/demo/runs/{other_run.public_id}/"):
        resp = anon.goto(f"{live_server.url}{path}")
        assert resp.status == 404 or "/login/" in anon.url, path
    anon.watched.errors.clear()  # the 404 navigations above log "failed to load" on purpose
    resp = anon.goto(f"{live_server.url}/s/{t_rollout}?run={other_run.public_id}")
    assert resp.status == 200
    body = anon.inner_text("body")
    assert "SWE-bench Verified" in body and "Qwen3-8B" not in body
    assert "<script>alert(1)</script>" in body  # model text shown as text, never run
    assert anon.eval_on_selector_all("a", "els => els.length") == 0
    anon.screenshot(path=os.path.join(screenshot_dir, "share_rollout.png"), full_page=True)
    resp = anon.goto(f"{live_server.url}/s/{t_example}")
    assert resp.status == 200 and "get_root_path" in anon.inner_text("body")
    assert anon.watched.errors == []


def test_share_input_errors(client: Any, team: Any) -> None:
    s = seed_002(team.project, with_training=False)
    client.force_login(team.editor)
    other = Run.objects.create(project=team.other_project, name="secret", kind="eval")
    resp = client.post("/p/demo/shares/new/", {"kind": "run", "target": other.public_id})
    assert resp.status_code == 400 and b"target: no such run in this project" in resp.content
    resp = client.post("/p/demo/shares/new/", {"kind": "comparison",
                                               "params": json.dumps({"runs": [
                                                   s["Qwen3-8B (untrained)"].public_id, other.public_id]})})
    assert resp.status_code == 400 and b"no run" in resp.content
    resp = client.post("/p/demo/shares/new/", {"kind": "run", "target": s["Qwen3-8B (untrained)"].public_id,
                                               "expires": "-3"})
    assert resp.status_code == 400 and b"expires" in resp.content
    assert not ShareLink.objects.exists()
