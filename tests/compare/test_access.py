"""Every URL of the compare area answers 404 to outsiders; viewers cannot write."""

from __future__ import annotations

from typing import Any

import pytest

from deeprepo_web.runs.models import ModelPrice
from deeprepo_web.sharing.models import ShareLink
from deeprepo_web.sharing.services import share_create
from tests.compare.patches import swebench_rollout
from tests.compare.seed002 import seed_002

pytestmark = pytest.mark.django_db


@pytest.fixture
def world(team: Any) -> dict[str, Any]:
    s = seed_002(team.project)
    s["rollout"] = swebench_rollout(team.project)
    s["link"], _ = share_create(project=team.project, user=team.owner, kind="run", target=s["train"].public_id)
    return s


def _get_urls(w: dict[str, Any]) -> list[str]:
    r = w["rollout"]
    ids = f"{w['Qwen3-8B (untrained)'].public_id},{w['Qwen3-30B-A3B (untrained)'].public_id}"
    return [
        "/p/demo/compare/",
        f"/p/demo/compare/?runs={ids}",
        f"/p/demo/compare/?runs={ids}&format=md",
        f"/p/demo/compare/?runs={ids}&format=csv",
        f"/p/demo/runs/{w['train'].public_id}/checkpoints/",
        f"/p/demo/runs/{r.run.public_id}/rollouts/{r.pk}/patch/",
        "/p/demo/prices/",
        "/p/demo/shares/",
    ]


def test_outsider_gets_404_everywhere(client: Any, team: Any, world: dict[str, Any]) -> None:
    client.force_login(team.outsider)
    for url in _get_urls(world):
        assert client.get(url).status_code == 404, url
    posts = [
        ("/p/demo/shares/new/", {"kind": "run", "target": world["train"].public_id}),
        (f"/p/demo/shares/{world['link'].pk}/revoke/", {}),
        ("/p/demo/prices/save/", {"model_pattern": "x", "input_per_mtok": "1", "output_per_mtok": "2"}),
    ]
    for url, body in posts:
        assert client.post(url, body).status_code == 404, url


def test_members_can_read(client: Any, team: Any, world: dict[str, Any]) -> None:
    client.force_login(team.viewer)
    for url in _get_urls(world):
        assert client.get(url).status_code == 200, url


def test_viewer_cannot_write(client: Any, team: Any, world: dict[str, Any]) -> None:
    client.force_login(team.viewer)
    assert client.post("/p/demo/shares/new/", {"kind": "run", "target": world["train"].public_id}).status_code == 404
    assert ShareLink.objects.count() == 1
    assert client.post(f"/p/demo/shares/{world['link'].pk}/revoke/").status_code == 404
    world["link"].refresh_from_db()
    assert world["link"].revoked_at is None
    resp = client.post("/p/demo/prices/save/", {"model_pattern": "x", "input_per_mtok": "1", "output_per_mtok": "2"})
    assert resp.status_code == 404
    assert not ModelPrice.objects.exists()
    # Viewers do not see the share button.
    page = client.get(f"/p/demo/runs/{world['rollout'].run.public_id}/rollouts/{world['rollout'].pk}/patch/")
    assert b"Create read-only link" not in page.content


def test_wrong_project_slug_is_404(client: Any, team: Any, world: dict[str, Any]) -> None:
    client.force_login(team.outsider)  # a member of "other" only
    r = world["rollout"]
    assert client.get(f"/p/other/runs/{r.run.public_id}/rollouts/{r.pk}/patch/").status_code == 404
    assert client.get(f"/p/other/runs/{world['train'].public_id}/checkpoints/").status_code == 404
    ids = f"{world['Qwen3-8B (untrained)'].public_id},{world['train'].public_id}"
    resp = client.get(f"/p/other/compare/?runs={ids}")
    assert resp.status_code == 400 and b"no run" in resp.content


def test_editor_edits_prices_and_cost_follows(client: Any, team: Any, world: dict[str, Any]) -> None:
    client.force_login(team.editor)
    ids = f"{world['Qwen3-30B-A3B (untrained)'].public_id},{world['Qwen3-30B-A3B (GRPO trained)'].public_id}"
    before = client.get(f"/p/demo/compare/?runs={ids}&format=csv").content.decode()
    resp = client.post("/p/demo/prices/save/", {"model_pattern": "Qwen3-30B-A3B", "input_per_mtok": "1",
                                                 "output_per_mtok": "3"})
    assert resp.status_code == 302
    assert ModelPrice.objects.get().model_pattern == "qwen3-30b-a3b"
    after = client.get(f"/p/demo/compare/?runs={ids}&format=csv").content.decode()
    cost = [line for line in after.splitlines() if ",cost_total," in line]
    # Untrained: 87,591 in + 13,202 out root tokens, plus sub-calls (2 batches x 2 calls x 6 rollouts).
    sub_in, sub_out = 6 * 2 * (1200 + 900), 6 * 2 * (150 + 120)
    expected = (87591 + sub_in) / 1e6 * 1 + (13202 + sub_out) / 1e6 * 3
    assert any(f"{expected:.6g}" in line for line in cost), (expected, cost)
    assert before != after
    bad = client.post("/p/demo/prices/save/", {"model_pattern": "x", "input_per_mtok": "abc",
                                                "output_per_mtok": "1"}, follow=True)
    assert b"input price: &#x27;abc&#x27; is not a number" in bad.content
