"""The compose file and the Dockerfile for teams. No container runtime can run here (no daemon, and
base images come from a registry this machine cannot reach), so: the compose file is validated
against the Compose Specification's JSON schema (compose-spec.json, vendored from
github.com/compose-spec/compose-spec at 170098ba, Apache-2.0), and both files are checked against
what the app really reads and runs. docs/deploy.md says they are untested otherwise."""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from tests.conftest import REPO

COMPOSE = REPO / "deploy" / "compose" / "compose.yaml"
SCHEMA = json.loads((Path(__file__).with_name("compose-spec.json")).read_text())


def _compose() -> dict[str, Any]:
    return yaml.safe_load(COMPOSE.read_text())


def _errors(doc: dict[str, Any]) -> list[str]:
    validator = jsonschema.Draft7Validator(SCHEMA)
    return [f"{'/'.join(map(str, e.absolute_path))}: {e.message}" for e in validator.iter_errors(doc)]


def test_compose_file_is_valid_by_the_compose_schema():
    assert _errors(_compose()) == []


def test_the_schema_check_has_teeth():
    broken = _compose()
    broken["services"]["web"]["ports"] = "8000:8000"  # a string where a list belongs
    broken["services"]["worker"]["restart_policy"] = "always"  # no such key
    errors = _errors(broken)
    assert any(e.startswith("services/web/ports") for e in errors), errors
    assert any("restart_policy" in e for e in errors), errors


def test_it_runs_postgres_redis_an_s3_store_web_worker_and_beat_from_one_image():
    services = _compose()["services"]
    assert {"postgres", "redis", "s3", "migrate", "web", "worker", "beat"} <= set(services)
    app = ("migrate", "web", "worker", "beat")
    assert all(services[s]["build"] == {"context": "../..", "dockerfile": "Dockerfile"} for s in app)
    assert (COMPOSE.parent / "../../Dockerfile").resolve() == REPO / "Dockerfile"
    # The same processes as the Procfile (tests/deploy/test_procfile.py starts those for real).
    assert services["worker"]["command"][:4] == ["celery", "-A", "workers.celery", "worker"]
    assert services["beat"]["command"][:4] == ["celery", "-A", "workers.celery", "beat"]
    assert services["migrate"]["command"] == ["deeprepo-web", "manage", "migrate", "--noinput"]
    for name in ("web", "worker", "beat"):
        assert services[name]["depends_on"]["migrate"] == {"condition": "service_completed_successfully"}


def test_every_app_variable_is_one_the_app_reads():
    # A typo here would be ignored silently by the app: each name must be in .env.example or be
    # one of boto3's standard credentials variables.
    documented = set(re.findall(r"^([A-Z][A-Z0-9_]+)=", (REPO / ".env.example").read_text(), re.M))
    env = _compose()["services"]["web"]["environment"]
    unknown = {k for k in env if k not in documented and not k.startswith("AWS_")}
    assert unknown == set()
    # Secrets are required from the operator, never defaulted in the file.
    for secret in ("SECRET_KEY", "AWS_SECRET_ACCESS_KEY"):
        assert ":?" in env[secret], f"{secret} must be required (${{VAR:?…}})"


def test_dockerfile_copies_what_the_wheel_build_needs_and_runs_the_web_app():
    text = (REPO / "Dockerfile").read_text()
    copied = re.findall(r"^COPY (?!--from)(.+?) \S+$", text, re.M)
    for line in copied:
        for name in line.split():
            assert (REPO / name).exists(), f"Dockerfile copies {name}, which is not in the repository"
    assert "uv build --wheel" in text and "deeprepo_web.wsgi" in text
    assert re.search(r"^USER deeprepo$", text, re.M), "the app must not run as root"


@pytest.mark.parametrize("path", ["deploy/compose/env.example"])
def test_compose_env_example_names_the_required_secrets(path):
    text = (REPO / path).read_text()
    required = set(re.findall(r"\$\{([A-Z0-9_]+):\?", COMPOSE.read_text()))
    assert required and all(re.search(rf"^{name}=", text, re.M) for name in required), required
