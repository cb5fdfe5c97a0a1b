"""Tiny typed readers for settings from the environment; they fail loudly on bad values."""

from __future__ import annotations

import os
import secrets
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlparse

from django.core.exceptions import ImproperlyConfigured


def env_str(name: str, default: str | None = None) -> str:
    value = os.environ.get(name)
    if value is None or value == "":
        if default is None:
            raise ImproperlyConfigured(f"environment variable {name} is required")
        return default
    return value


def env_bool(name: str, default: bool = False) -> bool:
    value = os.environ.get(name, "").strip().lower()
    if value == "":
        return default
    if value in {"1", "true", "yes", "on"}:
        return True
    if value in {"0", "false", "no", "off"}:
        return False
    raise ImproperlyConfigured(f"{name}={value!r} is not a boolean (use 1/0, true/false)")


def env_int(name: str, default: int) -> int:
    value = os.environ.get(name, "").strip()
    if value == "":
        return default
    try:
        return int(value)
    except ValueError as exc:
        raise ImproperlyConfigured(f"{name}={value!r} is not an integer") from exc


def env_list(name: str, default: list[str]) -> list[str]:
    value = os.environ.get(name, "").strip()
    if value == "":
        return default
    return [item.strip() for item in value.split(",") if item.strip()]


def database_from_url(url: str) -> dict[str, object]:
    """postgres://user:pass@host:port/name?host=/socket/dir -> Django DATABASES entry."""
    parsed = urlparse(url)
    if parsed.scheme not in {"postgres", "postgresql"}:
        raise ImproperlyConfigured(f"DATABASE_URL must be a postgres:// URL, got scheme {parsed.scheme!r}")
    query = parse_qs(parsed.query)
    host = query.get("host", [parsed.hostname or ""])[0]
    return {
        "ENGINE": "django.db.backends.postgresql",
        "NAME": unquote(parsed.path.lstrip("/")) or "postgres",
        "USER": unquote(parsed.username or ""),
        "PASSWORD": unquote(parsed.password or ""),
        "HOST": host,
        "PORT": str(parsed.port or ""),
        "CONN_MAX_AGE": env_int("DEEPREPO_CONN_MAX_AGE", 60),
        "CONN_HEALTH_CHECKS": True,
    }


def secret_key_from_file(path: Path) -> str:
    if path.exists():
        return path.read_text().strip()
    path.parent.mkdir(parents=True, exist_ok=True)
    key = secrets.token_urlsafe(50)
    # Written beside it, then linked into place: processes that start at once on a new data directory
    # (gunicorn's workers) all read the one key that won. Created in place, the losers died on the file
    # the winner had just made (FileExistsError), and gunicorn shut down.
    tmp = path.with_name(f".{path.name}.{os.getpid()}")
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    with os.fdopen(fd, "w") as fh:
        fh.write(key)
    try:
        os.link(tmp, path)
    except FileExistsError:
        key = path.read_text().strip()
    finally:
        tmp.unlink()
    return key


ROLES = ("viewer", "editor", "admin")  # accounts.models.Role's values (env is below accounts; a test keeps them equal)


def env_role_map(name: str) -> dict[str, list[tuple[str, str]]]:
    """`group=project:role,group2=project:role` -> {group: [(project slug, role), …]}.

    A claim value may name several projects (repeat it); the roles are the project roles.
    """
    value = os.environ.get(name, "").strip()
    mapping: dict[str, list[tuple[str, str]]] = {}
    for entry in (item.strip() for item in value.split(",")):
        if not entry:
            continue
        claim_value, sep, grant = entry.rpartition("=")
        slug, colon, role = grant.partition(":")
        if not sep or not colon or not claim_value.strip() or not slug.strip() or role.strip() not in ROLES:
            raise ImproperlyConfigured(
                f"{name}: {entry!r} is not <claim value>=<project slug>:<{'|'.join(ROLES)}>")
        mapping.setdefault(claim_value.strip(), []).append((slug.strip(), role.strip()))
    return mapping
