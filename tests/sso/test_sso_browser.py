"""Single sign-on in a real browser against a real OpenID provider: the login page offers the
provider, the user signs in there and lands here with the role its group maps to, the sign-in is in
the audit log, and logout ends the provider's session too."""

from __future__ import annotations

from deeprepo_web.accounts.models import Membership
from deeprepo_web.audit.models import AuditEvent
from deeprepo_web.sso.models import SsoIdentity
from tests.sso.conftest import loopback_only


def _sign_in_at_provider(page, login: str, issuer: str) -> None:
    page.click("text=Sign in with Lab IdP")
    page.fill("input[name=login]", login)
    page.fill("input[name=password]", "any-password")
    page.click("button[type=submit]")
    page.wait_for_url(lambda url: not url.startswith(issuer))
    page.watched.errors.clear()  # the provider's own pages: their web font is blocked (loopback only)


def test_sign_in_maps_the_group_to_a_role_and_logout_ends_both_sessions(
        browser_page, live_server, team, sso_on, screenshot_dir):
    page = browser_page()
    loopback_only(page.context)
    page.goto(f"{live_server.url}/login/")
    assert page.locator("a.sso").inner_text() == "Sign in with Lab IdP"
    assert page.locator("input[name=password]").count() == 1  # local accounts keep their form
    page.screenshot(path=f"{screenshot_dir}/sso-login.png", full_page=True)

    _sign_in_at_provider(page, "ada", sso_on.issuer)
    page.wait_for_url(f"{live_server.url}/")
    assert "ada" in page.locator(".topbar").inner_text()
    identity = SsoIdentity.objects.select_related("user").get(subject="ada", issuer=sso_on.issuer)
    assert identity.user.username == "ada" and identity.user.email == "ada@lab.test"
    assert not identity.user.has_usable_password()
    assert Membership.objects.get(user=identity.user, project=team.project).role == "admin"
    assert not Membership.objects.filter(user=identity.user, project=team.other_project).exists()

    # An admin by the provider's group: the audit page is open to ada and shows the sign-in.
    page.goto(f"{live_server.url}/p/demo/settings/audit/")
    rows = page.locator("table.audit tbody tr")
    assert "signed in with single sign-on" in rows.nth(0).inner_text()
    assert "member added or role changed" in rows.nth(1).inner_text()
    assert "sso (Lab IdP)" in rows.nth(1).inner_text()
    assert page.watched.errors == []
    page.screenshot(path=f"{screenshot_dir}/sso-audit.png", full_page=True)
    assert AuditEvent.objects.filter(project=team.project, action="sso.login", actor="ada").count() == 1

    # Logout: our session ends, the browser goes to the provider's end_session_endpoint, which asks.
    page.click("text=Log out")
    page.click("button[name=logout][value=yes]")
    page.wait_for_url(f"{live_server.url}/login/")
    assert page.goto(f"{live_server.url}/p/demo/").url.startswith(f"{live_server.url}/login/")
    # The provider's session is gone too: signing in again asks for the login, not a silent return.
    page.click("text=Sign in with Lab IdP")
    page.wait_for_selector("input[name=login]")
    assert page.url.startswith(sso_on.issuer)


def test_group_gives_editor_in_one_project_and_viewer_in_another(browser_page, live_server, team, sso_on):
    page = browser_page()
    loopback_only(page.context)
    page.goto(f"{live_server.url}/login/")
    _sign_in_at_provider(page, "bo", sso_on.issuer)
    page.wait_for_url(f"{live_server.url}/")
    user = SsoIdentity.objects.get(subject="bo").user
    roles = dict(Membership.objects.filter(user=user).values_list("project__slug", "role"))
    assert roles == {"demo": "editor", "other": "viewer"}
    # An editor, not an admin: the audit page is not there for bo.
    assert page.goto(f"{live_server.url}/p/demo/settings/audit/").status == 404
    assert page.goto(f"{live_server.url}/p/demo/").status == 200


def test_provider_refuses_a_client_without_pkce_and_no_one_is_signed_in(
        browser_page, live_server, team, sso_on, settings):
    # The provider requires a code challenge: with PKCE off here, it sends the browser back with an
    # error, and the login page says so. (Proves the passing tests above did send one.)
    settings.OIDC_USE_PKCE = False
    page = browser_page()
    loopback_only(page.context)
    page.goto(f"{live_server.url}/login/")
    page.click("text=Sign in with Lab IdP")
    page.wait_for_url(f"{live_server.url}/login/?sso=failed")
    assert "Signing in with Lab IdP did not succeed" in page.locator("p.error").inner_text()
    assert not SsoIdentity.objects.exists()


def test_local_account_logs_in_and_out_beside_sso(browser_page, live_server, team, sso_on):
    page = browser_page(team.editor)  # the password form, as before
    loopback_only(page.context)
    assert "editor" in page.locator(".topbar").inner_text()
    page.click("text=Log out")
    page.wait_for_url(f"{live_server.url}/login/")  # no trip to the provider: it never signed in there
    assert page.watched.errors == []
