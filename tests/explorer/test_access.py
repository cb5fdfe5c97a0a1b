"""Every explorer URL: outsiders get 404, viewers can read."""

from __future__ import annotations

from typing import Any

import pytest

pytestmark = pytest.mark.django_db


def urls(seeded: Any) -> list[str]:
    rid = seeded.alpha.public_id
    return ["/p/demo/", f"/p/demo/runs/{rid}/", f"/p/demo/runs/{rid}/health/",
            f"/p/demo/runs/{rid}/live/", f"/p/demo/rows/?ids={rid}"]


def test_outsider_gets_404_everywhere(client: Any, team: Any, seeded: Any) -> None:
    client.force_login(team.outsider)
    for url in urls(seeded):
        assert client.get(url).status_code == 404, url
    # A run of this project reached through another project's slug is not found either.
    client.force_login(team.owner)
    assert client.get(f"/p/other/runs/{seeded.alpha.public_id}/").status_code == 404


def test_viewer_can_read_everything(client: Any, team: Any, seeded: Any) -> None:
    client.force_login(team.viewer)
    for url in urls(seeded):
        assert client.get(url).status_code in (200, 286), url


def test_anonymous_is_sent_to_login(client: Any, team: Any, seeded: Any) -> None:
    for url in urls(seeded):
        res = client.get(url)
        assert res.status_code == 302 and res["Location"].startswith("/login/"), url


def test_series_endpoint_for_a_session_member_only(client: Any, team: Any, seeded: Any) -> None:
    url = f"/api/v1/runs/{seeded.alpha.public_id}/series"
    client.force_login(team.viewer)
    assert client.get(url, {"key": "reward"}).json()["value"] == [0.1, 0.2, 0.3, 0.41]
    client.force_login(team.outsider)
    assert client.get(url, {"key": "reward"}).status_code == 404
