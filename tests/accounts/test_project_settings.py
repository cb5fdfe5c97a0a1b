from __future__ import annotations

import re

from deeprepo_web.accounts.models import ApiKey, Membership, hash_key


def test_admin_creates_a_key_shown_once_and_stored_hashed(client, team):
    client.force_login(team.owner)
    res = client.post("/p/demo/settings/keys/", {"name": "cluster", "scopes": ["ingest"]})
    html = res.content.decode()
    secret = re.search(r"drk_[0-9a-f]{8}-[A-Za-z0-9]{40}", html).group(0)
    key = ApiKey.objects.get(name="cluster")
    assert key.secret_hash == hash_key(secret) and key.scopes == ["ingest"]
    again = client.get("/p/demo/settings/").content.decode()
    assert secret not in again and f"drk_{key.prefix}…" in again


def test_revoked_key_stops_working(client, team, api):
    client.force_login(team.owner)
    key = ApiKey.objects.get(name="test")
    client.post(f"/p/demo/settings/keys/{key.pk}/revoke/")
    assert api.post("/runs", {"name": "x"}).status_code == 401


def test_only_admins_reach_settings(client, team):
    for user in (team.editor, team.viewer, team.outsider):
        client.force_login(user)
        assert client.get("/p/demo/settings/").status_code == 404
        assert client.post("/p/demo/settings/keys/", {"name": "x"}).status_code == 404
    assert not ApiKey.objects.filter(name="x").exists()


def test_admin_adds_and_removes_members(client, team):
    client.force_login(team.owner)
    client.post("/p/demo/settings/members/", {"username": "outsider", "role": "viewer"})
    membership = Membership.objects.get(project=team.project, user=team.outsider)
    assert membership.role == "viewer"
    res = client.post("/p/demo/settings/members/", {"username": "nobody", "role": "viewer"})
    assert "no user named" in res.content.decode()
    client.post(f"/p/demo/settings/members/{membership.pk}/remove/")
    assert not Membership.objects.filter(project=team.project, user=team.outsider).exists()


def test_key_with_only_read_scope_cannot_write(client, team):
    from deeprepo_web.accounts.services import api_key_create

    _, secret = api_key_create(project=team.project, scopes=["read"])
    res = client.post("/api/v1/runs", data='{"name": "x"}', content_type="application/json",
                      headers={"Authorization": f"Bearer {secret}"})
    assert res.status_code == 403 and "may not write" in res.json()["error"]
