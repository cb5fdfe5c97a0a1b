"""A real OpenID provider (npm's oidc-provider, tests/sso/oidc_provider.mjs) on loopback, its client
registered with the live server's callback, and settings that turn single sign-on on against it.

.ci/install-oidc.sh installs the provider outside the checkout; without it these tests skip, unless
DEEPREPO_REQUIRE_OIDC=1 (CI) makes that a failure."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx
import pytest

from tests.infra._proc import free_port, stop_pid, wait_until

SCRIPT = Path(__file__).with_name("oidc_provider.mjs")
CLIENT_ID = "deeprepo-web"
CLIENT_SECRET = "test-only-client-secret-0123456789abcdef"
# Who may sign in at the provider (any password), and the groups it says they are in.
ACCOUNTS = {
    "ada": {"email": "ada@lab.test", "name": "Ada Admin", "groups": ["rl-admins", "staff"]},
    "bo": {"email": "bo@lab.test", "name": "Bo Trainer", "groups": ["rl-team"]},
}


@dataclass
class Provider:
    issuer: str
    pid: int


def _provider_dir() -> Path:
    return Path(os.environ.get("DEEPREPO_OIDC_PROVIDER_DIR", "/opt/deeprepo-oidc"))


@pytest.fixture(scope="session")
def oidc_provider(live_server: Any, tmp_path_factory: Any) -> Iterator[Provider]:
    node = shutil.which("node")
    if node is None or not (_provider_dir() / "node_modules" / "oidc-provider").is_dir():
        reason = f"node or oidc-provider in {_provider_dir()} missing (run .ci/install-oidc.sh)"
        if os.environ.get("DEEPREPO_REQUIRE_OIDC") == "1":
            pytest.fail(reason)
        pytest.skip(reason)
    port = free_port()
    issuer = f"http://127.0.0.1:{port}"
    client = {"client_id": CLIENT_ID, "client_secret": CLIENT_SECRET,
              "redirect_uris": [f"{live_server.url}/oidc/callback/"],
              "post_logout_redirect_uris": [f"{live_server.url}/login/"]}
    env = {"PATH": os.environ.get("PATH", ""), "OIDC_PROVIDER_DIR": str(_provider_dir()),
           "OIDC_PORT": str(port), "OIDC_CLIENT": json.dumps(client), "OIDC_ACCOUNTS": json.dumps(ACCOUNTS)}
    log = tmp_path_factory.mktemp("oidc") / "provider.log"
    with open(log, "wb") as out:
        proc = subprocess.Popen([node, str(SCRIPT)], env=env, stdout=out, stderr=subprocess.STDOUT)

    def answers() -> bool:
        if proc.poll() is not None:
            raise RuntimeError(f"the OpenID provider exited: {log.read_text()}")
        try:
            return httpx.get(f"{issuer}/.well-known/openid-configuration", timeout=2).status_code == 200
        except httpx.HTTPError:
            return False

    try:
        wait_until(answers, 30, "the OpenID provider")
        yield Provider(issuer=issuer, pid=proc.pid)
    finally:
        stop_pid(proc.pid)


@pytest.fixture
def sso_settings(settings: Any) -> Any:
    """Single sign-on on, as an operator would set it (the provider's URL comes from `sso_on`)."""
    from deeprepo_web.sso import provider

    provider._cache.clear()
    settings.DEEPREPO_OIDC_PROVIDER_NAME = "Lab IdP"
    settings.OIDC_RP_CLIENT_ID = CLIENT_ID
    settings.OIDC_RP_CLIENT_SECRET = CLIENT_SECRET
    settings.OIDC_RP_SCOPES = "openid email profile groups"
    settings.DEEPREPO_OIDC_ROLES_CLAIM = "groups"
    settings.DEEPREPO_OIDC_ROLE_MAP = {
        "rl-admins": [("demo", "admin")],
        "rl-team": [("demo", "editor"), ("other", "viewer")],
    }
    return settings


@pytest.fixture
def sso_on(sso_settings: Any, oidc_provider: Provider) -> Provider:
    sso_settings.DEEPREPO_OIDC_ISSUER = oidc_provider.issuer
    return oidc_provider


def loopback_only(context: Any) -> None:
    """The provider's stock pages @import a web font: the browser may reach loopback only."""
    def route(r: Any) -> None:
        host = httpx.URL(r.request.url).host
        if host in ("127.0.0.1", "localhost", "::1"):
            r.continue_()
        else:
            r.abort()

    context.route("**/*", route)
