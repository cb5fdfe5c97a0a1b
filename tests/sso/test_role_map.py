"""The operator's role map (DEEPREPO_OIDC_ROLE_MAP) and what a sign-in does to memberships."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.core.exceptions import ImproperlyConfigured

from deeprepo_web.accounts.models import Membership, Role
from deeprepo_web.audit.models import AuditEvent
from deeprepo_web.env import ROLES, env_role_map
from deeprepo_web.sso.roles import claim_values
from deeprepo_web.sso.services import sso_login, sso_user_create


def test_role_map_reads_several_projects_per_value(monkeypatch):
    monkeypatch.setenv("MAP", " rl-team=demo:editor, rl-team=bench:viewer,cn=admins=demo:admin ")
    # A value may hold "=" (an LDAP-style group name): the last "=" splits it from the grant.
    assert env_role_map("MAP") == {"rl-team": [("demo", "editor"), ("bench", "viewer")],
                                   "cn=admins": [("demo", "admin")]}


def test_the_role_maps_names_are_the_project_roles():
    # env reads settings below the accounts app, so it cannot import Role: it keeps the same names.
    assert ROLES == tuple(Role.values)


@pytest.mark.parametrize("bad", ["rl-team", "rl-team=demo", "rl-team=demo:owner", "=demo:admin", "x=:admin"])
def test_bad_role_map_fails_loudly_naming_the_entry(monkeypatch, bad):
    monkeypatch.setenv("MAP", bad)
    with pytest.raises(ImproperlyConfigured, match="MAP: .* is not <claim value>=<project slug>:<viewer|editor|admin>"):
        env_role_map("MAP")


def test_claim_values_take_a_list_one_string_or_a_nested_path():
    claims = {"groups": ["a", "b", 3, {"x": 1}], "role": "admin", "realm_access": {"roles": ["rl"]}}
    assert claim_values(claims, "groups") == {"a", "b", "3"}
    assert claim_values(claims, "role") == {"admin"}
    assert claim_values(claims, "realm_access.roles") == {"rl"}
    assert claim_values(claims, "missing.deeper") == set()


@pytest.fixture
def mapped(settings, team):
    settings.DEEPREPO_OIDC_ISSUER = "https://idp.lab.test"
    settings.DEEPREPO_OIDC_PROVIDER_NAME = "Lab IdP"
    settings.DEEPREPO_OIDC_ROLES_CLAIM = "groups"
    settings.DEEPREPO_OIDC_ROLE_MAP = {"rl-admins": [("demo", "admin")], "rl-team": [("demo", "editor")],
                                       "gone": [("no-such-project", "admin")]}
    return team


def test_each_sign_in_sets_raises_lowers_and_removes_roles_in_mapped_projects_only(mapped):
    claims = {"sub": "u-1", "email": "cy@lab.test", "preferred_username": "cy", "groups": ["rl-team", "gone"]}
    user = sso_login(user=sso_user_create(claims=claims), claims=claims)
    assert Membership.objects.get(user=user, project=mapped.project).role == "editor"
    # An admin of the other project (not in the map) adds cy there by hand: sign-ins leave that alone.
    Membership.objects.create(user=user, project=mapped.other_project, role="viewer")
    sso_login(user=user, claims={**claims, "groups": ["rl-team", "rl-admins"]})  # the highest role wins
    assert Membership.objects.get(user=user, project=mapped.project).role == "admin"
    sso_login(user=user, claims={**claims, "groups": []})
    assert not Membership.objects.filter(user=user, project=mapped.project).exists()
    assert Membership.objects.get(user=user, project=mapped.other_project).role == "viewer"
    actions = list(AuditEvent.objects.filter(project=mapped.project, target="cy").order_by("pk")
                   .values_list("action", "actor"))
    assert actions == [("member.set", "sso (Lab IdP)"), ("sso.login", "cy"), ("member.set", "sso (Lab IdP)"),
                       ("sso.login", "cy"), ("member.removed", "sso (Lab IdP)")]


def test_a_local_account_with_the_same_name_is_never_taken_over(mapped):
    # "editor" is a local account (team): a provider user who calls itself editor gets its own account.
    claims = {"sub": "u-2", "email": "someone@lab.test", "preferred_username": "editor", "groups": ["rl-admins"]}
    user = sso_login(user=sso_user_create(claims=claims), claims=claims)
    assert user.username == "editor-2" and user.pk != mapped.editor.pk
    assert Membership.objects.get(user=mapped.editor, project=mapped.project).role == "editor"
    assert User.objects.get(pk=mapped.editor.pk).check_password("editor-pass-123")


def test_sso_off_hides_the_button_and_its_urls(client, team, settings):
    settings.DEEPREPO_OIDC_ISSUER = ""
    page = client.get("/login/")
    assert page.status_code == 200 and b"Sign in with" not in page.content
    assert client.get("/oidc/authenticate/").status_code == 404
    assert client.get("/oidc/callback/?code=x&state=y").status_code == 404
    assert client.post("/login/", {"username": "owner", "password": "owner-pass-123"}).status_code == 302


def test_provider_down_keeps_the_password_form_with_a_clear_message(client, team, settings):
    from deeprepo_web.sso import provider
    from tests.infra._proc import free_port

    provider._cache.clear()
    settings.DEEPREPO_OIDC_ISSUER = f"http://127.0.0.1:{free_port()}"  # nothing listens there
    settings.DEEPREPO_OIDC_PROVIDER_NAME = "Lab IdP"
    page = client.get("/oidc/authenticate/", follow=True)
    assert page.redirect_chain == [("/login/?sso=unavailable", 302)]
    assert b"Lab IdP does not answer right now" in page.content and b'name="password"' in page.content
