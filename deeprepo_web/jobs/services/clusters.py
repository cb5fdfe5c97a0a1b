"""Clusters: settings checked by building the backend, secrets encrypted, a connection test on demand."""

from __future__ import annotations

from typing import Any

from django.db import transaction
from django.utils import timezone

from deeprepo_web.accounts.models import Project
from deeprepo_web.audit.models import Action
from deeprepo_web.audit.services import audit_record
from deeprepo_web.crypto import SecretsUnreadable
from deeprepo_web.jobs.models import Cluster, ClusterKind
from deeprepo_web.jobs.services.errors import JobInputError
from deeprepo_web.jobs.services.workers import queue_clean
from deeprepo_web.text import clean_deep, clean_text
from workers.backends import Backend, BackendError, backend_class, backend_for

# Cluster settings the web side uses itself (the rest go to the backend).
OUR_SETTINGS = ("deeprepo_url", "workdir", "output_root")


def _clean_settings(kind: str, raw: dict[str, Any]) -> dict[str, Any]:
    backend = backend_class(kind)
    out: dict[str, Any] = {}
    for key in (*backend.setting_fields, *OUR_SETTINGS):
        value = raw.get(key)
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        if key in backend.number_settings:
            try:
                value = backend.number_settings[key](value)
            except (TypeError, ValueError):
                raise JobInputError(key, f"must be a number, got {str(value)[:40]!r}") from None
            if value <= 0 or value > 65535:
                raise JobInputError(key, "must be a positive number")
        elif isinstance(value, str):
            value = value.strip() if key != "known_hosts" else value.strip() + "\n"
            if key != "known_hosts" and "\n" in value:
                raise JobInputError(key, "must be one line")
        out[key] = value
    url = out.get("deeprepo_url")
    if url and not str(url).startswith(("http://", "https://")):
        raise JobInputError("deeprepo_url", "must start with http:// or https://")
    return out


def backend_for_cluster(cluster: Cluster) -> Backend:
    try:
        secrets = cluster.get_secrets()
    except SecretsUnreadable as e:
        raise BackendError(str(e), permanent=True) from e
    backend_settings = {k: v for k, v in cluster.settings.items() if k not in OUR_SETTINGS}
    return backend_for(cluster.kind, backend_settings, secrets)


def cluster_save(
    *, project: Project, name: str, kind: str, settings_in: dict[str, Any],
    secrets_in: dict[str, str | None] | None = None, cluster: Cluster | None = None, queue: str | None = None,
) -> Cluster:
    """Validate and save. secrets_in: name -> new value; None or "" keeps what is stored.

    Settings are checked by building the backend (required keys, key format, known_hosts
    syntax) without contacting the cluster; `cluster_test` does that. queue: the Celery queue its
    jobs go to ("" = the default queue; None keeps what is stored)."""
    name = clean_text(name).strip()
    if not name or len(name) > 100:
        raise JobInputError("name", "is required (at most 100 characters)")
    if kind not in ClusterKind.values:
        raise JobInputError("kind", f"{kind!r} is not one of {', '.join(ClusterKind.values)}")
    if cluster is not None and cluster.kind != kind:
        raise JobInputError("kind", "cannot change the kind of an existing cluster; add a new one")
    clean = _clean_settings(kind, clean_deep(settings_in))
    queue = queue_clean(queue) if queue is not None else (cluster.queue if cluster is not None else "")
    secret_fields = backend_class(kind).secret_fields
    try:
        secrets = cluster.get_secrets() if cluster is not None else {}
    except SecretsUnreadable:
        secrets = {}
    for key, value in (secrets_in or {}).items():
        if key not in secret_fields:
            raise JobInputError(key, f"is not a secret of a {kind} cluster")
        if value:
            secrets[key] = value.strip() + ("\n" if key == "private_key" else "")
    secrets = {k: v for k, v in secrets.items() if k in secret_fields}
    clash = Cluster.objects.filter(project=project, name=name)
    if cluster is not None:
        clash = clash.exclude(pk=cluster.pk)
    if clash.exists():
        raise JobInputError("name", f"a cluster named {name!r} already exists")
    try:
        with backend_for(kind, {k: v for k, v in clean.items() if k not in OUR_SETTINGS}, secrets) as backend:
            backend.check()
    except BackendError as e:
        raise JobInputError("settings", e.message) from e
    if cluster is None:
        cluster = Cluster(project=project, kind=kind)
    cluster.name = name
    cluster.queue = queue
    cluster.settings = clean
    cluster.set_secrets(secrets)
    with transaction.atomic():
        created = cluster.pk is None
        cluster.save()
        # Secret values never go in the row: only which ones were replaced.
        audit_record(project=project, action=Action.CLUSTER_SAVED, target=f"{kind} {name}", created=created,
                     settings=clean, queue=queue, secrets_replaced=sorted(k for k, v in (secrets_in or {}).items() if v))
    return cluster


def cluster_test(*, cluster: Cluster) -> tuple[bool, str]:
    """Contact the cluster once (sinfo / version / state_dir); remember and return the verdict."""
    try:
        with backend_for_cluster(cluster) as backend:
            ok, message = True, backend.test_connection()
    except BackendError as e:
        ok, message = False, e.message
    except Exception as e:  # noqa: BLE001 - any library failure is a failed test, shown to the admin
        ok, message = False, f"{e.__class__.__name__}: {e}"
    Cluster.objects.filter(pk=cluster.pk).update(
        last_test_at=timezone.now(), last_test_ok=ok, last_test_message=message[:2000]
    )
    cluster.refresh_from_db()
    return ok, message
