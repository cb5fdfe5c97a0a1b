from __future__ import annotations


def test_login_pauses_after_repeated_failures(client, team, settings):
    settings.LOGIN_MAX_FAILURES = 3
    for _ in range(3):
        res = client.post("/login/", {"username": "viewer", "password": "wrong"})
        assert res.status_code == 200 and "Wrong username or password" in res.content.decode()
    res = client.post("/login/", {"username": "viewer", "password": "viewer-pass-123"})
    assert res.status_code == 429 and "Too many failed attempts" in res.content.decode()
    # another user from the same address is not paused
    res = client.post("/login/", {"username": "editor", "password": "editor-pass-123"})
    assert res.status_code == 302


def test_login_form_has_csrf_and_rejects_without_it(team):
    from django.test import Client

    strict = Client(enforce_csrf_checks=True)
    page = strict.get("/login/")
    assert "csrfmiddlewaretoken" in page.content.decode()
    res = strict.post("/login/", {"username": "viewer", "password": "viewer-pass-123"})
    assert res.status_code == 403
