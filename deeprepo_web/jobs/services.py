"""Jobs: launch, dispatch, follow, cancel. The only web code that enqueues tasks.

Every status change is a conditional UPDATE (`filter(id=…, status=OLD).update(status=NEW)`)
that must change exactly one row before anything happens outside the database, plus a
JobEvent. A duplicated, retried or redelivered task therefore finds the row already moved
and does nothing. Dispatch also holds a Postgres advisory lock on the job while it talks to
the cluster: the lock dies with the worker's connection, so a task redelivered after a worker
was killed mid-submit knows the previous attempt is gone, looks the job up on the cluster
(adopt, never duplicate) and only then submits again.
"""

from __future__ import annotations

import contextlib
import functools
import importlib
import inspect
import logging
import random
from collections.abc import Iterator
from datetime import timedelta
from pathlib import Path
from typing import Any

from django.conf import settings
from django.core.validators import slug_re
from django.db import connection, transaction
from django.db.models import F, Q
from django.db.models.functions import Coalesce
from django.utils import timezone

from deeprepo_web.accounts.models import ApiKey, Project
from deeprepo_web.accounts.services import api_key_create, api_key_revoke
from deeprepo_web.jobs.builtin import BUILTIN_TEMPLATES
from deeprepo_web.jobs.crypto import SecretsUnreadable
from deeprepo_web.jobs.models import (
    ACTIVE_JOB_STATUSES,
    FINAL_JOB_STATUSES,
    Cluster,
    ClusterKind,
    Job,
    JobEvent,
    JobStatus,
    JobTemplate,
)
from deeprepo_web.jobs.params import (
    ParamError,
    render_command,
    validate_params,
    validate_schema,
    validate_template,
)
from deeprepo_web.runs.models import Run, RunStatus
from deeprepo_web.runs.services import run_create
from deeprepo_web.text import clean_deep, clean_text
from workers.backends import Backend, BackendError, JobSpec, JobState, Resources, backend_for

log = logging.getLogger(__name__)

LOG_TAIL_BYTES = 32_000
# Prefix of Job.error while the cluster cannot be reached (cleared when it answers again).
FOLLOW_ERROR = "cannot follow the job"
_LOCK_NAMESPACE = 7_301  # pg advisory locks: (namespace, job id)
_SYNC_LOCK = (7_302, 0)
# After submit, a queued job is polled this often for this many times (then beat takes over).
FOLLOW_EVERY = 0.5
FOLLOW_POLLS = 8

# Cluster settings the web side uses itself (the rest go to the backend).
OUR_SETTINGS = ("deeprepo_url", "workdir", "output_root")
# What each kind takes: settings shown on the form, and secrets (encrypted, never shown).
KIND_SETTINGS: dict[str, tuple[str, ...]] = {
    ClusterKind.LOCAL: ("state_dir", "kill_grace_s"),
    ClusterKind.SLURM: ("host", "port", "user", "known_hosts", "slurm_conf", "bin_dir", "state_dir",
                        "command_timeout", "connect_timeout"),
    ClusterKind.RAY: ("address", "timeout", "submit_timeout"),
}
KIND_SECRETS: dict[str, tuple[str, ...]] = {
    ClusterKind.LOCAL: (),
    ClusterKind.SLURM: ("private_key", "passphrase"),
    ClusterKind.RAY: ("token",),
}
_NUMERIC_SETTINGS = {"port": int, "command_timeout": float, "connect_timeout": float, "timeout": float,
                     "submit_timeout": float, "kill_grace_s": float}
RESOURCE_FIELDS = ("partition", "gpus", "cpus", "mem", "time_limit", "account", "ray_resources")

_JOB_TO_RUN: dict[str, str] = {
    JobStatus.RUNNING: RunStatus.RUNNING,
    JobStatus.SUCCEEDED: RunStatus.FINISHED,
    JobStatus.FAILED: RunStatus.FAILED,
    JobStatus.CANCELLED: RunStatus.CANCELLED,
    JobStatus.LOST: RunStatus.CRASHED,
}
_STATE_TO_JOB = {
    JobState.PENDING: JobStatus.QUEUED,
    JobState.RUNNING: JobStatus.RUNNING,
    JobState.SUCCEEDED: JobStatus.SUCCEEDED,
    JobState.FAILED: JobStatus.FAILED,
    JobState.CANCELLED: JobStatus.CANCELLED,
    JobState.LOST: JobStatus.LOST,
}


class JobInputError(ValueError):
    """Bad input from a form or API call; `field` names it."""

    def __init__(self, field: str, message: str) -> None:
        super().__init__(f"{field}: {message}")
        self.field = field
        self.message = message


class JobStateError(ValueError):
    """The job is not in a state that allows the action."""


class DispatchRetry(Exception):
    """A transient cluster error: the task should try again in `countdown` seconds."""

    def __init__(self, message: str, countdown: float) -> None:
        super().__init__(message)
        self.countdown = countdown


# ---------------------------------------------------------------- templates


def builtin_templates_ensure() -> None:
    """Create or refresh the built-in templates (cheap when they are current)."""
    existing = {t.slug: t for t in JobTemplate.objects.filter(project__isnull=True, builtin=True)}
    for spec in BUILTIN_TEMPLATES:
        fields = {
            "name": spec["name"], "kind": spec["kind"], "description": spec["description"],
            "command_template": spec["command_template"],
            "params_schema": validate_template(spec["command_template"], spec["params_schema"]),
            "import_outputs": spec.get("import_outputs", False),
        }
        current = existing.get(spec["slug"])
        if current is None:
            with contextlib.suppress(Exception), transaction.atomic():  # a concurrent request made it
                JobTemplate.objects.create(project=None, slug=spec["slug"], builtin=True, **fields)
        elif any(getattr(current, k) != v for k, v in fields.items()):
            JobTemplate.objects.filter(pk=current.pk).update(**fields)


def templates_for_project(project: Project) -> list[JobTemplate]:
    if not JobTemplate.objects.filter(project__isnull=True, builtin=True).exists():
        builtin_templates_ensure()
    order = {spec["slug"]: i for i, spec in enumerate(BUILTIN_TEMPLATES)}
    templates = JobTemplate.objects.filter(Q(project=project) | Q(project__isnull=True))
    # Built-ins in their curated order (the demo first), then the project's own by name.
    return sorted(templates, key=lambda t: (0, order.get(t.slug, 99), "") if t.builtin else (1, 0, t.name.lower()))


def template_save(
    *, project: Project, slug: str, name: str, kind: str, command_template: str, params_schema: Any,
    description: str = "", import_outputs: bool = False, template: JobTemplate | None = None,
) -> JobTemplate:
    """Validate and save a project template; a placeholder without a parameter is refused."""
    if not slug_re.match(slug) or len(slug) > JobTemplate._meta.get_field("slug").max_length:  # type: ignore[operator]
        raise JobInputError("slug", "letters, digits, - and _ only (at most 64)")  # it goes into URLs
    name, description, command_template = clean_text(name), clean_text(description), clean_text(command_template)
    try:
        # Cleaned after validation, which refuses NUL in defaults and NaN with a message; what is
        # left to clean is text (labels, help, choices) holding NUL or lone surrogates.
        schema = clean_deep(validate_template(command_template, params_schema))
    except ParamError as e:
        raise JobInputError(e.field, e.message) from e
    if kind not in ("train", "eval"):
        raise JobInputError("kind", f"{kind!r} is not train or eval")
    if template is not None and (template.builtin or template.project_id != project.id):
        raise JobInputError("template", "built-in templates cannot be edited; save a copy under a new slug")
    clash = JobTemplate.objects.filter(Q(project=project) | Q(project__isnull=True), slug=slug)
    if template is not None:
        clash = clash.exclude(pk=template.pk)
    if clash.exists():
        raise JobInputError("slug", f"a template {slug!r} already exists")
    fields = {"slug": slug, "name": name, "kind": kind, "command_template": command_template,
              "params_schema": schema, "description": description, "import_outputs": import_outputs}
    if template is None:
        return JobTemplate.objects.create(project=project, **fields)
    for k, v in fields.items():
        setattr(template, k, v)
    template.save()
    return template


# ---------------------------------------------------------------- clusters


def _clean_settings(kind: str, raw: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for key in (*KIND_SETTINGS.get(kind, ()), *OUR_SETTINGS):
        value = raw.get(key)
        if value is None or (isinstance(value, str) and not value.strip()):
            continue
        if key in _NUMERIC_SETTINGS:
            try:
                value = _NUMERIC_SETTINGS[key](value)
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
    secrets_in: dict[str, str | None] | None = None, cluster: Cluster | None = None,
) -> Cluster:
    """Validate and save. secrets_in: name -> new value; None or "" keeps what is stored.

    Settings are checked by building the backend (required keys, key format, known_hosts
    syntax) without contacting the cluster; `cluster_test` does that."""
    name = clean_text(name).strip()
    if not name or len(name) > 100:
        raise JobInputError("name", "is required (at most 100 characters)")
    if kind not in ClusterKind.values:
        raise JobInputError("kind", f"{kind!r} is not one of {', '.join(ClusterKind.values)}")
    if cluster is not None and cluster.kind != kind:
        raise JobInputError("kind", "cannot change the kind of an existing cluster; add a new one")
    clean = _clean_settings(kind, clean_deep(settings_in))
    try:
        secrets = cluster.get_secrets() if cluster is not None else {}
    except SecretsUnreadable:
        secrets = {}
    for key, value in (secrets_in or {}).items():
        if key not in KIND_SECRETS.get(kind, ()):
            raise JobInputError(key, f"is not a secret of a {kind} cluster")
        if value:
            secrets[key] = value.strip() + ("\n" if key == "private_key" else "")
    secrets = {k: v for k, v in secrets.items() if k in KIND_SECRETS.get(kind, ())}
    clash = Cluster.objects.filter(project=project, name=name)
    if cluster is not None:
        clash = clash.exclude(pk=cluster.pk)
    if clash.exists():
        raise JobInputError("name", f"a cluster named {name!r} already exists")
    try:
        backend = backend_for(kind, {k: v for k, v in clean.items() if k not in OUR_SETTINGS}, secrets)
        if kind == ClusterKind.SLURM and clean.get("host"):
            import paramiko

            from workers.backends.runners import add_known_hosts, load_private_key

            add_known_hosts(paramiko.HostKeys(), str(clean.get("known_hosts", "")))
            load_private_key(secrets.get("private_key", ""), secrets.get("passphrase"))
        backend.close()
    except BackendError as e:
        raise JobInputError("settings", e.message) from e
    if cluster is None:
        cluster = Cluster(project=project, kind=kind)
    cluster.name = name
    cluster.settings = clean
    cluster.set_secrets(secrets)
    cluster.save()
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


# ---------------------------------------------------------------- launch / cancel (web)


def _event(job: Job | int, from_status: str, to_status: str, reason: str) -> None:
    JobEvent.objects.create(job_id=job if isinstance(job, int) else job.pk, from_status=from_status,
                            to_status=to_status, reason=clean_text(reason)[:4000])


def resources_validate(raw: dict[str, Any]) -> dict[str, Any]:
    """Resources as stored on the job (JSON), after the backends' own validation."""
    out: dict[str, Any] = {}
    for key in RESOURCE_FIELDS:
        value = raw.get(key)
        if value is None or value == "" or value == {}:
            continue
        if key in ("gpus", "cpus"):
            try:
                value = int(value)
            except (TypeError, ValueError):
                raise JobInputError(key, f"must be an integer, got {str(value)[:40]!r}") from None
        elif key == "ray_resources":
            if not isinstance(value, dict):
                raise JobInputError(key, "must be an object name -> amount")
        else:
            value = str(value).strip()
        out[key] = value
    unknown = sorted(set(raw) - set(RESOURCE_FIELDS))
    if unknown:
        raise JobInputError(unknown[0], "is not a resource (partition, gpus, cpus, mem, time_limit, account, "
                                        "ray_resources)")
    try:
        Resources(**out)
    except BackendError as e:
        field = next((k for k in RESOURCE_FIELDS if e.message.startswith(k.replace("_", " ")) or
                      e.message.startswith(k)), "resources")
        raise JobInputError(field, e.message) from e
    return out


def _output_dir(cluster: Cluster, job: Job) -> str:
    root = str(cluster.settings.get("output_root") or "")
    if not root:
        root = str(Path(settings.DATA_DIR) / "job-outputs") if cluster.kind == ClusterKind.LOCAL \
            else ".deeprepo/outputs"
    return f"{root.rstrip('/')}/{job.public_id}"


@transaction.atomic
def job_launch(
    *, project: Project, template: JobTemplate, cluster: Cluster, params: dict[str, Any],
    resources: dict[str, Any] | None = None, user: Any = None, name: str = "",
) -> Job:
    """Validate, create the Job and its Run (queued), and dispatch once the transaction commits."""
    if template.project_id not in (None, project.id):
        raise JobInputError("template", "not a template of this project")
    if cluster.project_id != project.id:
        raise JobInputError("cluster", "not a cluster of this project")
    try:
        schema = validate_schema(template.params_schema)
        # params.py refuses NUL in values; a lone surrogate passes it, and jsonb would refuse it.
        values = clean_deep(validate_params(schema, params))
    except ParamError as e:
        raise JobInputError(e.field, e.message) from e
    res = resources_validate(resources or {})
    name = clean_text(name or "").strip() or f"{template.name} {timezone.now():%Y-%m-%d %H:%M}"
    if len(name) > 200:
        raise JobInputError("name", "must be at most 200 characters")
    run, _ = run_create(
        project=project, name=name, kind=template.kind, status=RunStatus.QUEUED, source="job",
        method="grpo" if template.slug in ("demo-grpo", "trl-grpo", "prime-rl") else "",
        config={"job_template": template.slug, "parameters": values, "cluster": cluster.name},
    )
    job = Job(project=project, template=template, cluster=cluster, run=run, created_by=user, name=name,
              parameters=values, resources=res, command="")
    job.output_dir = _output_dir(cluster, job)
    try:
        job.command = render_command(template.command_template, schema, values, {
            "output_dir": job.output_dir, "job_id": job.public_id, "run_id": run.public_id,
        })
    except ParamError as e:
        raise JobInputError(e.field, e.message) from e
    job.save()
    who = getattr(user, "username", "") or "system"
    _event(job, "", JobStatus.PENDING, f"launched by {who} on {cluster.name} ({cluster.kind})")
    transaction.on_commit(functools.partial(_enqueue, "dispatch", job.pk))
    return job


def _stale_after() -> timedelta:
    return timedelta(seconds=float(settings.DEEPREPO_JOB_STALE_DISPATCH_SECONDS))


def _enqueue(what: str, job_id: int, *, note: bool = True) -> bool:
    """Send dispatch_job / cancel_job. The broker may be away (Redis restarting): then the
    row is already committed, so say so on the job and let beat's sync send it again once
    the job is stale, instead of failing the user's request after the fact."""
    from workers import tasks

    task = tasks.dispatch_job if what == "dispatch" else tasks.cancel_job
    try:
        task.delay(job_id)
    except Exception as e:  # noqa: BLE001 - kombu/redis raise many types; all mean "not queued"
        log.warning("could not queue %s of job %s: %s", what, job_id, e)
        if not note:
            return False
        status = Job.objects.filter(pk=job_id).values_list("status", flat=True).first() or ""
        _event(job_id, status, status,
               f"the task queue is unreachable ({e.__class__.__name__}: {str(e)[:200]}); the {what} will be "
               f"sent again within {_stale_after().total_seconds() + settings.DEEPREPO_JOB_SYNC_SECONDS:.0f}s "
               "of the queue coming back")
        return False
    return True


def job_cancel(*, job: Job, user: Any = None) -> Job:
    who = getattr(user, "username", "") or "system"
    now = timezone.now()
    with transaction.atomic():
        cancelled = Job.objects.filter(pk=job.pk, status=JobStatus.PENDING).update(
            status=JobStatus.CANCELLED, finished_at=now)
        if cancelled:
            # Never reached the cluster: dispatch will find it cancelled and do nothing.
            _event(job, JobStatus.PENDING, JobStatus.CANCELLED, f"cancelled by {who} before it was submitted")
            _finalize(job.pk)
    if not cancelled:
        for status in (JobStatus.SUBMITTING, JobStatus.QUEUED, JobStatus.RUNNING):
            if Job.objects.filter(pk=job.pk, status=status).update(status=JobStatus.CANCELLING):
                _event(job, status, JobStatus.CANCELLING, f"cancel requested by {who}")
                transaction.on_commit(functools.partial(_enqueue, "cancel", job.pk))
                break
        else:
            job.refresh_from_db()
            raise JobStateError(f"job is {job.status}; nothing to cancel")
    job.refresh_from_db()
    return job


# ---------------------------------------------------------------- dispatch (worker)


@contextlib.contextmanager
def _advisory_lock(key: tuple[int, int]) -> Iterator[bool]:
    with connection.cursor() as cur:
        cur.execute("SELECT pg_try_advisory_lock(%s, %s)", key)
        held = bool(cur.fetchone()[0])
    try:
        yield held
    finally:
        if held:
            with contextlib.suppress(Exception), connection.cursor() as cur:
                cur.execute("SELECT pg_advisory_unlock(%s, %s)", key)


def _spec(job: Job, api_secret: str) -> JobSpec:
    cluster = job.cluster
    url = str(cluster.settings.get("deeprepo_url") or settings.SITE_URL).rstrip("/")
    env = {
        "DEEPREPO_URL": url,
        "DEEPREPO_API_KEY": api_secret,
        "DEEPREPO_RUN_ID": job.run.public_id if job.run else "",
        "DEEPREPO_PROJECT": job.project.slug,
        "DEEPREPO_JOB_ID": job.public_id,
        "DEEPREPO_OUTPUT_DIR": job.output_dir,
        "PYTHONUNBUFFERED": "1",  # the log tail should show prints as they happen
    }
    return JobSpec(
        job_id=job.public_id, name=f"deeprepo-{job.public_id}", command=job.command, env=env,
        workdir=str(cluster.settings.get("workdir") or "") or None, resources=Resources(**job.resources),
    )


def _job_key(job: Job) -> str:
    """A fresh API key for this attempt, valid for this job's project only and revoked at its end."""
    if job.api_key_id:
        api_key_revoke(key=ApiKey(pk=job.api_key_id))
    key, secret = api_key_create(
        project=job.project, user=job.created_by, name=f"job {job.public_id}", scopes=["ingest", "read"],
        # A backstop only: the key is revoked as soon as the job reaches a final state.
        expires_at=timezone.now() + timedelta(days=14),
    )
    Job.objects.filter(pk=job.pk).update(api_key=key)
    return secret


def _retry_delay(attempt: int) -> float:
    base = float(settings.DEEPREPO_JOB_RETRY_SECONDS)
    return min(300.0, base * 2 ** max(0, attempt - 1)) * random.uniform(0.8, 1.2)


def job_dispatch(*, job_id: int) -> str:
    """Submit the job to its cluster. Returns what happened (for the task log).

    Raises DispatchRetry for a transient error while attempts remain."""
    with _advisory_lock((_LOCK_NAMESPACE, job_id)) as held:
        if not held:
            return "busy: another worker is dispatching this job"
        job = Job.objects.filter(pk=job_id).select_related("cluster", "project", "run", "created_by").first()
        if job is None:
            return "gone"
        recovering = False
        if Job.objects.filter(pk=job_id, status=JobStatus.PENDING).update(
            status=JobStatus.SUBMITTING, attempts=F("attempts") + 1
        ):
            _event(job, JobStatus.PENDING, JobStatus.SUBMITTING, f"dispatch attempt {job.attempts + 1}")
        elif job.status in (JobStatus.SUBMITTING, JobStatus.CANCELLING) and not job.external_id:
            # We hold the lock, so whoever set SUBMITTING is gone (worker killed mid-submit).
            recovering = True
            _event(job, job.status, job.status,
                   "a previous dispatch was interrupted; looking for the job on the cluster before submitting")
        else:
            return f"nothing to do: job is {job.status}"
        job.refresh_from_db()
        try:
            backend = backend_for_cluster(job.cluster)
        except BackendError as e:
            _dispatch_failed(job, e)
            return f"failed: {e.message}"
        try:
            return _submit(job, backend, recovering)
        finally:
            backend.close()


def _submit(job: Job, backend: Backend, recovering: bool) -> str:
    try:
        external_id = None
        if recovering or job.attempts > 1:
            # An earlier attempt may have reached the cluster before it died or timed out.
            external_id = backend.find(_spec(job, ""))
        if external_id:
            how = f"found on the cluster as {external_id} (adopted, not submitted again)"
        elif job.status == JobStatus.CANCELLING:
            with transaction.atomic():
                if Job.objects.filter(pk=job.pk, status=JobStatus.CANCELLING).update(
                        status=JobStatus.CANCELLED, finished_at=timezone.now()):
                    _event(job, JobStatus.CANCELLING, JobStatus.CANCELLED, "cancelled before it reached the cluster")
                    _finalize(job.pk)
            return "cancelled before submit"
        else:
            external_id = backend.submit(_spec(job, _job_key(job)))
            how = f"submitted to {job.cluster.name} as {external_id}"
    except BackendError as e:
        return _dispatch_failed(job, e)
    now = timezone.now()
    Job.objects.filter(pk=job.pk, status__in=[JobStatus.SUBMITTING, JobStatus.CANCELLING]).update(
        external_id=external_id, submitted_at=now, error="")
    if Job.objects.filter(pk=job.pk, status=JobStatus.SUBMITTING).update(status=JobStatus.QUEUED):
        _event(job, JobStatus.SUBMITTING, JobStatus.QUEUED, how)
    else:
        # Cancelled while we were submitting: carry it out now that the cluster knows the job.
        _event(job, JobStatus.CANCELLING, JobStatus.CANCELLING, how)
        with contextlib.suppress(BackendError):
            backend.cancel(external_id)
    job.refresh_from_db()
    # Look once right away, so a job that starts at once shows running without waiting for beat;
    # if the cluster still queues it, look again briefly at a faster pace than beat's.
    _sync_one(job, backend)
    job.refresh_from_db()
    if job.status == JobStatus.QUEUED:
        from workers.tasks import follow_job

        try:
            follow_job.apply_async((job.pk, FOLLOW_POLLS), countdown=FOLLOW_EVERY)
        except Exception as e:  # noqa: BLE001 - broker away: beat's sync follows the job anyway
            log.warning("could not queue follow_job for job %s: %s", job.pk, e)
    return how


def job_follow(*, job_id: int) -> bool:
    """One quick poll of a freshly queued job; True while it is still queued."""
    job = Job.objects.filter(pk=job_id).select_related("cluster", "project", "run").first()
    if job is None or job.status != JobStatus.QUEUED or not job.external_id:
        return False
    with backend_for_cluster(job.cluster) as backend:
        _sync_one(job, backend)
    job.refresh_from_db()
    return job.status == JobStatus.QUEUED


def _dispatch_failed(job: Job, e: BackendError) -> str:
    max_attempts = int(settings.DEEPREPO_JOB_DISPATCH_ATTEMPTS)
    job.refresh_from_db()
    if not e.permanent and job.attempts < max_attempts and job.status == JobStatus.SUBMITTING:
        delay = _retry_delay(job.attempts)
        if Job.objects.filter(pk=job.pk, status=JobStatus.SUBMITTING).update(status=JobStatus.PENDING,
                                                                              error=e.message):
            _event(job, JobStatus.SUBMITTING, JobStatus.PENDING,
                   f"attempt {job.attempts} of {max_attempts} failed: {e.message}; retrying in {delay:.0f}s")
            raise DispatchRetry(e.message, delay)
        return f"attempt failed and the job moved on ({job.status})"
    reason = e.message if e.permanent else f"gave up after {job.attempts} attempts: {e.message}"
    for status in (JobStatus.SUBMITTING, JobStatus.CANCELLING):
        final = JobStatus.FAILED if status == JobStatus.SUBMITTING else JobStatus.CANCELLED
        with transaction.atomic():
            moved = Job.objects.filter(pk=job.pk, status=status).update(status=final, error=reason,
                                                                        finished_at=timezone.now())
            if moved:
                _event(job, status, final, reason)
                _finalize(job.pk)
        if moved:
            break
    return f"failed: {reason}"


def job_cancel_on_cluster(*, job_id: int) -> str:
    job = Job.objects.filter(pk=job_id).select_related("cluster", "project", "run").first()
    if job is None or job.status != JobStatus.CANCELLING:
        return "nothing to do"
    if not job.external_id:
        return "not on the cluster yet; dispatch will cancel it"
    with backend_for_cluster(job.cluster) as backend:
        backend.cancel(job.external_id)
        _sync_one(job, backend)
    return "cancel sent"


# ---------------------------------------------------------------- sync (worker, beat)


def jobs_sync(*, limit: int = 1000) -> dict[str, int]:
    """Follow every active job once. One pass at a time (advisory lock); beat calls this."""
    counts = {"checked": 0, "changed": 0, "redispatched": 0}
    with _advisory_lock(_SYNC_LOCK) as held:
        if not held:
            return counts
        stale = timezone.now() - _stale_after()
        # Jobs whose task message was lost (broker restarted, publish failed): send it again.
        # A duplicate is harmless: dispatch moves a job by conditional updates under a per-job lock.
        for job_id, status, external_id in Job.objects.filter(
            Q(status__in=[JobStatus.PENDING, JobStatus.SUBMITTING]) | Q(status=JobStatus.CANCELLING),
            updated_at__lt=stale,
        ).values_list("pk", "status", "external_id")[:100]:
            what = "cancel" if status == JobStatus.CANCELLING and external_id else "dispatch"
            if not _enqueue(what, job_id, note=False):
                break  # the broker is away; the next pass tries again
            Job.objects.filter(pk=job_id).update(updated_at=timezone.now())
            _event(job_id, status, status, f"{what} sent again: nothing happened for "
                   f"{_stale_after().total_seconds():.0f}s (its task message was lost)")
            counts["redispatched"] += 1
        jobs = list(
            Job.objects.filter(status__in=ACTIVE_JOB_STATUSES).exclude(external_id="")
            .select_related("cluster", "project", "run").order_by("synced_at")[:limit]
        )
        by_cluster: dict[int, list[Job]] = {}
        for job in jobs:
            by_cluster.setdefault(job.cluster_id, []).append(job)
        for group in by_cluster.values():
            try:
                backend = backend_for_cluster(group[0].cluster)
            except BackendError as e:
                for job in group:
                    _note_sync_error(job, e)
                continue
            try:
                for i, job in enumerate(group):
                    counts["checked"] += 1
                    try:
                        counts["changed"] += int(_sync_one(job, backend, raise_transient=True))
                    except BackendError as e:
                        # The cluster is unreachable (controller down, network): each further
                        # poll would wait out the same timeout, so say so on the rest at once.
                        for other in group[i:]:
                            _note_sync_error(other, e)
                        break
            finally:
                backend.close()
    return counts


def _note_sync_error(job: Job, e: BackendError) -> None:
    """The cluster did not answer: keep the last known status, say so on the job (once per outage)."""
    message = f"{FOLLOW_ERROR}: {e.message}" + ("" if e.permanent else " (will keep trying)")
    now = timezone.now()
    with transaction.atomic():
        if Job.objects.filter(pk=job.pk).exclude(error__startswith=FOLLOW_ERROR).update(
                error=message, synced_at=now):
            _event(job, job.status, job.status,
                   f"cluster unreachable, the status shown is the last one it reported: {e.message}")
        else:
            Job.objects.filter(pk=job.pk).update(error=message, synced_at=now)


def _sync_one(job: Job, backend: Backend, *, raise_transient: bool = False) -> bool:
    """Poll one job; apply the transition the cluster reports. True if the status changed.

    A cluster that does not answer changes nothing but the job's error line (and one event);
    with raise_transient the caller gets that error instead, to spare the other jobs' polls."""
    if not job.external_id or job.status in FINAL_JOB_STATUSES:
        return False
    try:
        status = backend.state(job.external_id)
        tail = backend.logs(job.external_id, LOG_TAIL_BYTES)
    except BackendError as e:
        if raise_transient and not e.permanent:
            raise
        _note_sync_error(job, e)
        return False
    now = timezone.now()
    tail = clean_text(tail)[-LOG_TAIL_BYTES:]
    updates: dict[str, Any] = {"synced_at": now}
    if tail and tail != job.log_tail:
        updates["log_tail"] = tail
    if job.error.startswith(FOLLOW_ERROR) and Job.objects.filter(
            pk=job.pk, error__startswith=FOLLOW_ERROR).update(error=""):
        _event(job, job.status, job.status, f"cluster reachable again; it reports the job {status.state}")
    new = _STATE_TO_JOB.get(status.state)
    old = job.status
    if new is None or new == old or (old == JobStatus.CANCELLING and not status.state.is_terminal):
        Job.objects.filter(pk=job.pk).update(**updates)
        return False
    if old == JobStatus.RUNNING and new == JobStatus.QUEUED:
        Job.objects.filter(pk=job.pk).update(**updates)  # requeued by the cluster; keep "running"
        return False
    updates["status"] = new
    if new == JobStatus.RUNNING:
        updates["started_at"] = Coalesce(F("started_at"), now)
    if new in FINAL_JOB_STATUSES:
        updates["finished_at"] = now
        updates["exit_code"] = status.exit_code
        if new in (JobStatus.FAILED, JobStatus.LOST):
            updates["error"] = status.reason or new
        updates["started_at"] = Coalesce(F("started_at"), F("submitted_at"))
    reason = status.reason or str(status.state)
    if new == JobStatus.CANCELLED and old != JobStatus.CANCELLING:
        reason = f"cancelled outside deeprepo ({reason})"
    if status.exit_code is not None and new in FINAL_JOB_STATUSES and "exit" not in reason:
        reason += f" (exit code {status.exit_code})"
    # The transition, its event and the run's mirror land together or not at all.
    with transaction.atomic():
        if not Job.objects.filter(pk=job.pk, status=old).update(**updates):
            return False  # someone else moved it first (a cancel, another sync); they recorded it
        _event(job, old, new, reason)
        if job.run_id and new == JobStatus.RUNNING:
            # The program's own client may already have said "running" (or more); never step back.
            Run.objects.filter(pk=job.run_id, status=RunStatus.QUEUED).update(
                status=RunStatus.RUNNING, started_at=Coalesce(F("started_at"), now))
        if new in FINAL_JOB_STATUSES:
            _finalize(job.pk)
    if new == JobStatus.SUCCEEDED and job.template is not None and job.template.import_outputs:
        _import_outputs(Job.objects.select_related("run", "template", "project", "cluster").get(pk=job.pk))
    return True


def _finalize(job_id: int) -> None:
    """After a final state (inside its transaction): revoke the job's key, mirror the run."""
    job = Job.objects.get(pk=job_id)
    if job.api_key_id:
        api_key_revoke(key=ApiKey(pk=job.api_key_id))
    if job.run_id and job.status in _JOB_TO_RUN:
        now = timezone.now()
        Run.objects.filter(pk=job.run_id).exclude(status=_JOB_TO_RUN[job.status]).update(
            status=_JOB_TO_RUN[job.status], finished_at=Coalesce(F("finished_at"), now),
            started_at=Coalesce(F("started_at"), now))


def _import_outputs(job: Job) -> None:
    try:
        module = importlib.import_module("deeprepo_web.importers.services")
        import_path = module.import_path
    except (ImportError, AttributeError):
        _event(job, job.status, job.status,
               f"outputs are in {job.output_dir} on {job.cluster.name}; this build has no importer, "
               "import them with the Import page")
        return
    if job.cluster.kind != ClusterKind.LOCAL and job.cluster.settings.get("host"):
        _event(job, job.status, job.status,
               f"outputs are in {job.output_dir} on {job.cluster.name} (a remote machine): copy them here to import")
        return
    kwargs: dict[str, Any] = {"project": job.project, "path": job.output_dir}
    if "run" in inspect.signature(import_path).parameters:
        kwargs["run"] = job.run
    try:
        report = import_path(**kwargs)
        _event(job, job.status, job.status, f"imported outputs from {job.output_dir}: {report}"[:2000])
    except Exception as e:  # noqa: BLE001 - the job itself succeeded; the import problem is shown
        log.exception("import of job %s outputs failed", job.public_id)
        _event(job, job.status, job.status, f"import of {job.output_dir} failed: {e}")


def job_cancel_failed(*, job_id: int, message: str) -> None:
    """The cluster refused the cancel for good: say so and keep following the job."""
    if Job.objects.filter(pk=job_id, status=JobStatus.CANCELLING).update(
        status=JobStatus.RUNNING, error=f"cancel failed: {message}"
    ):
        _event(job_id, JobStatus.CANCELLING, JobStatus.RUNNING, f"cancel failed: {message}")
