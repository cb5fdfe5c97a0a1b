"""Sweeps: create one, advance it (follow trials, prune, launch the next ones), cancel it.

`sweep_advance` is the only writer of a running sweep's trials; it holds a Postgres advisory lock
on the sweep while it works, so beat's tick and the task enqueued at creation never overlap.
Trials are launched through the jobs services, each in its own transaction with its Trial row:
a crash between two leaves nothing half made.
"""

from __future__ import annotations

import functools
import logging
import math
from typing import Any

from django.db import connection, transaction
from django.utils import timezone

from deeprepo_web.accounts.models import Project
from deeprepo_web.jobs.models import FINAL_JOB_STATUSES, Cluster, Job, JobStatus, JobTemplate
from deeprepo_web.jobs.params import ParamError, validate_params, validate_schema
from deeprepo_web.jobs.services.errors import JobInputError, JobStateError
from deeprepo_web.jobs.services.launch import job_cancel, jobs_launch
from deeprepo_web.jobs.services.state import advisory_lock, job_event
from deeprepo_web.runs.models import Metric, MetricSeries
from deeprepo_web.sweeps import study as studies
from deeprepo_web.sweeps.errors import SweepInputError
from deeprepo_web.sweeps.models import (
    OPEN_TRIAL_STATUSES,
    Direction,
    Method,
    Pruner,
    Sweep,
    SweepStatus,
    Trial,
    TrialStatus,
)
from deeprepo_web.sweeps.space import MAX_TRIALS, space_check, space_parse
from deeprepo_web.text import clean_text
from workers.queue import enqueue

log = logging.getLogger(__name__)

_LOCK_NAMESPACE = 7_401  # pg advisory locks: (namespace, sweep id)
POINTS_PER_PASS = 2_000  # metric points read per running trial and advance
MAX_POINTS = 20_000  # a trial's stored intermediate values
LAUNCH_CHUNK = 25  # trials launched per transaction

_JOB_TO_TRIAL = {
    JobStatus.PENDING: TrialStatus.QUEUED, JobStatus.SUBMITTING: TrialStatus.QUEUED,
    JobStatus.QUEUED: TrialStatus.QUEUED, JobStatus.RUNNING: TrialStatus.RUNNING,
    JobStatus.CANCELLING: TrialStatus.RUNNING, JobStatus.FAILED: TrialStatus.FAILED,
    JobStatus.LOST: TrialStatus.FAILED, JobStatus.CANCELLED: TrialStatus.CANCELLED,
}


def _bounded(field: str, value: Any, low: int, high: int) -> int:
    try:
        number = int(value)
    except (TypeError, ValueError):
        raise SweepInputError(field, f"must be an integer, got {str(value)[:40]!r}") from None
    if not low <= number <= high:
        raise SweepInputError(field, f"must be between {low} and {high:,}, got {number:,}")
    return number


def sweep_create(
    *, project: Project, template: JobTemplate, cluster: Cluster, specs: dict[str, str],
    fixed: dict[str, Any] | None = None, method: str, metric: str, direction: str = Direction.MAXIMIZE,
    max_trials: int, max_parallel: int, pruner: str = Pruner.NONE, warmup_steps: int = 0,
    startup_trials: int = 2, seed: int = 0, user: Any = None, name: str = "",
) -> Sweep:
    """Check the space against the template and save the sweep; its first trials launch once it commits."""
    if template.project_id not in (None, project.id):
        raise SweepInputError("template", "not a template of this project")
    if cluster.project_id != project.id:
        raise SweepInputError("cluster", "not a cluster of this project")
    if method not in Method.values:
        raise SweepInputError("method", f"{method!r} is not one of {', '.join(Method.values)}")
    if pruner not in Pruner.values:
        raise SweepInputError("pruner", f"{pruner!r} is not one of {', '.join(Pruner.values)}")
    if direction not in Direction.values:
        raise SweepInputError("direction", "must be maximize or minimize")
    metric = clean_text(metric or "").strip()
    if not metric or len(metric) > 500:
        raise SweepInputError("metric", "name the metric to optimize (a key the program logs, e.g. reward)")
    schema = validate_schema(template.params_schema)
    space = space_parse(schema, specs)
    # One value is not a dimension: it is that parameter's fixed value for every trial.
    single = {k: e["values"][0] for k, e in space.items() if len(e.get("values", ())) == 1}
    space = {k: e for k, e in space.items() if k not in single}
    fixed = {**{k: v for k, v in (fixed or {}).items() if k not in space and v not in (None, "")}, **single}
    asked_trials = _bounded("max_trials", max_trials, 1, MAX_TRIALS)
    max_trials = space_check(space, method, asked_trials)
    note = (f"the grid has {max_trials} points: {max_trials} trials, not the {asked_trials} asked"
            if max_trials < asked_trials else "")
    max_parallel = _bounded("max_parallel", max_parallel, 1, MAX_TRIALS)
    warmup_steps = _bounded("warmup_steps", warmup_steps, 0, 10**9)
    startup_trials = _bounded("startup_trials", startup_trials, 0, MAX_TRIALS)
    try:
        # One point of the space with the fixed values: what every trial's launch will check.
        first = {k: (e["values"][0] if "values" in e else e["low"]) for k, e in space.items()}
        fixed = validate_params(schema, {**fixed, **first})
    except ParamError as e:
        raise SweepInputError(e.field, e.message) from e
    fixed = {k: v for k, v in fixed.items() if k not in space}
    name = clean_text(name or "").strip() or f"{template.name} sweep {timezone.now():%Y-%m-%d %H:%M}"
    if len(name) > 200:
        raise SweepInputError("name", "must be at most 200 characters")
    with transaction.atomic():
        sweep = Sweep.objects.create(
            project=project, template=template, cluster=cluster, created_by=user, name=name, method=method,
            space=space, fixed=fixed, metric=metric, direction=direction, max_trials=max_trials,
            max_parallel=min(max_parallel, max_trials), pruner=pruner, warmup_steps=warmup_steps,
            startup_trials=startup_trials, seed=seed, note=note,
        )
        transaction.on_commit(functools.partial(enqueue, "deeprepo.sweeps.advance", sweep.pk))
    return sweep


def sweep_advance(*, sweep_id: int) -> dict[str, int]:
    """Follow every open trial, prune what the pruner stops, launch trials up to the limits."""
    counts = {"updated": 0, "pruned": 0, "launched": 0}
    with advisory_lock((_LOCK_NAMESPACE, sweep_id)) as held:
        if not held:
            return counts
        sweep = Sweep.objects.filter(pk=sweep_id).select_related("template", "cluster", "project",
                                                                 "created_by").first()
        if sweep is None:
            return counts
        trials = list(Trial.objects.filter(sweep=sweep).select_related("job").order_by("number"))
        fresh = [t for t in trials if t.status in OPEN_TRIAL_STATUSES and _follow(sweep, t)]
        counts["updated"] = len(fresh)
        if sweep.status != SweepStatus.RUNNING:
            return counts
        study = studies.study_load(sweep, trials)
        for trial in fresh:
            if trial.status == TrialStatus.RUNNING and sweep.pruner != Pruner.NONE:
                counts["pruned"] += int(_maybe_prune(sweep, study, trial))
        counts["launched"] = _launch_more(sweep, study, trials)
        _finish_if_done(sweep)
    return counts


def _follow(sweep: Sweep, trial: Trial) -> bool:
    """Bring a trial up to its job: status, new metric points, the final value. True if anything changed."""
    job = trial.job
    if job is None:
        return False
    # A job not started yet has logged nothing: no metric query for the (maybe hundreds of) queued ones.
    started = job.status not in (JobStatus.PENDING, JobStatus.SUBMITTING, JobStatus.QUEUED)
    changed = started and _read_points(sweep, trial)
    status = _JOB_TO_TRIAL.get(JobStatus(job.status))
    if job.status == JobStatus.SUCCEEDED:
        value = MetricSeries.objects.filter(run=job.run, key=sweep.metric).values_list(
            "last_value", flat=True).first()
        if value is None or not math.isfinite(value):
            status = TrialStatus.FAILED
            trial.note = f"the job succeeded but never logged a finite {sweep.metric!r}"
        else:
            status, trial.value = TrialStatus.COMPLETE, float(value)
    if status is None or status == trial.status:
        if changed:
            trial.save(update_fields=["intermediate", "last_step"])
        return changed
    trial.status = status
    if trial.is_final:
        trial.finished_at = job.finished_at or timezone.now()
        if status == TrialStatus.FAILED and not trial.note:
            trial.note = (job.error or job.status)[:2000]
    trial.save(update_fields=["status", "value", "intermediate", "last_step", "note", "finished_at"])
    return True


def _read_points(sweep: Sweep, trial: Trial) -> bool:
    job = trial.job
    if job is None or job.run_id is None or len(trial.intermediate) >= MAX_POINTS:
        return False
    series_id = MetricSeries.objects.filter(run_id=job.run_id, key=sweep.metric).values_list("pk", flat=True).first()
    if series_id is None:
        return False
    after = trial.last_step if trial.last_step is not None else -(2**62)
    rows = list(Metric.objects.filter(series_id=series_id, step__gt=after).order_by("step")
                .values_list("step", "value")[:POINTS_PER_PASS])
    finite = [(s, v) for s, v in rows if v is not None and math.isfinite(v)]
    if not rows:
        return False
    trial.intermediate = {**trial.intermediate, **{str(s): v for s, v in finite}}
    trial.last_step = rows[-1][0]
    return True


def _maybe_prune(sweep: Sweep, study: Any, trial: Trial) -> bool:
    # The study was rebuilt after _follow read the trial's new points, so it judges the latest step.
    prune, attrs = studies.study_should_prune(study, trial.number)
    if attrs != trial.system_attrs:
        Trial.objects.filter(pk=trial.pk).update(system_attrs=attrs)
    if not prune:
        return False
    step = trial.last_step
    value = trial.intermediate.get(str(step))
    note = f"pruned at step {step} ({sweep.metric} {value:.4g})" if value is not None else f"pruned at step {step}"
    with transaction.atomic():
        if not Trial.objects.filter(pk=trial.pk, status=TrialStatus.RUNNING).update(
                status=TrialStatus.PRUNED, note=note, finished_at=timezone.now(), system_attrs=attrs):
            return False
        if trial.job is not None:
            job_event(trial.job, trial.job.status, trial.job.status, f"sweep {sweep.name}: {note}; cancelling")
    if trial.job is not None:
        try:
            job_cancel(job=trial.job)
        except JobStateError:
            pass  # it ended on its own meanwhile; the trial stays pruned
    return True


def _launch_more(sweep: Sweep, study: Any, trials: list[Trial]) -> int:
    open_count = sum(1 for t in trials if t.status in OPEN_TRIAL_STATUSES)
    slots = max(0, min(sweep.max_parallel - open_count, sweep.max_trials - len(trials)))
    dists = studies.distributions(sweep)
    launched = 0
    while launched < slots:
        points = [studies.study_ask(study, dists) for _ in range(min(LAUNCH_CHUNK, slots - launched))]
        if not _trials_launch(sweep, len(trials) + launched, points):
            break  # cancelled meanwhile
        launched += len(points)
    return launched


def _trials_launch(sweep: Sweep, first: int, points: list[tuple[dict[str, Any], dict[str, Any]]]) -> bool:
    """Launch a chunk of trials in one transaction: their jobs through jobs_launch (runs, jobs,
    events in one INSERT each, the dispatch messages sent together), a refused point failing alone."""
    with transaction.atomic():
        # The sweep's row lock orders these launches against a cancel: after one, no trial starts.
        if not list(Sweep.objects.select_for_update().filter(pk=sweep.pk, status=SweepStatus.RUNNING)
                    .values_list("pk", flat=True)):
            return False
        launched = jobs_launch(
            project=sweep.project, template=sweep.template, cluster=sweep.cluster, user=sweep.created_by,
            points=[(f"{sweep.name} · trial {n}", {**sweep.fixed, **params})
                    for n, (params, _) in enumerate(points, start=first)])
        made: list[Trial] = []
        for number, ((params, attrs), job) in enumerate(zip(points, launched, strict=True), start=first):
            trial = Trial(sweep=sweep, number=number, params=params, system_attrs=attrs)
            if isinstance(job, JobInputError):
                # A sampled point the template refuses: the trial fails, and the sampler learns it.
                trial.status, trial.note, trial.finished_at = TrialStatus.FAILED, f"{job.field}: {job.message}", \
                    timezone.now()
            else:
                trial.job = job
            made.append(trial)
        Trial.objects.bulk_create(made)
        runs = [(t.job.run_id, t.number) for t in made if t.job is not None and t.job.run_id is not None]
        if runs:
            # Each trial's run says which sweep and trial it is (one statement for the chunk).
            with connection.cursor() as cur:
                cur.execute(
                    "UPDATE runs_run AS r SET config = r.config || jsonb_build_object('sweep', jsonb_build_object("
                    "'id', %s::text, 'name', %s::text, 'trial', v.n)) FROM unnest(%s::bigint[], %s::int[]) AS v(id, n) "
                    "WHERE r.id = v.id",
                    [sweep.public_id, sweep.name, [r for r, _ in runs], [n for _, n in runs]],
                )
    return True


def _finish_if_done(sweep: Sweep) -> None:
    total = Trial.objects.filter(sweep=sweep).count()
    # A pruned trial is final at once, its job a moment later: the sweep ends when every job has.
    still = (Trial.objects.filter(sweep=sweep, status__in=OPEN_TRIAL_STATUSES).exists()
             or Job.objects.filter(sweep_trial__sweep=sweep).exclude(status__in=FINAL_JOB_STATUSES).exists())
    if total >= sweep.max_trials and not still:
        Sweep.objects.filter(pk=sweep.pk, status=SweepStatus.RUNNING).update(
            status=SweepStatus.FINISHED, finished_at=timezone.now())


def sweep_cancel(*, sweep: Sweep, user: Any = None) -> int:
    """Stop the sweep: no new trials; every open trial's job is cancelled. Returns how many."""
    who = getattr(user, "username", "") or "system"
    with transaction.atomic():
        Sweep.objects.filter(pk=sweep.pk, status=SweepStatus.RUNNING).update(
            status=SweepStatus.CANCELLED, finished_at=timezone.now(), note=f"cancelled by {who}")
        open_trials = list(Trial.objects.select_for_update(of=("self",)).filter(sweep=sweep, status__in=OPEN_TRIAL_STATUSES)
                           .select_related("job"))
        Trial.objects.filter(pk__in=[t.pk for t in open_trials]).update(
            status=TrialStatus.CANCELLED, note=f"sweep cancelled by {who}", finished_at=timezone.now())
    for trial in open_trials:
        job = trial.job
        if job is not None and job.can_cancel:
            try:
                job_cancel(job=job, user=user)
            except JobStateError:
                pass  # it ended meanwhile
    sweep.refresh_from_db()
    return len(open_trials)


def sweeps_tick() -> dict[str, int]:
    """Beat: advance every running sweep (each under its own lock)."""
    counts = {"sweeps": 0, "launched": 0, "pruned": 0}
    for sweep_id in Sweep.objects.filter(status=SweepStatus.RUNNING).values_list("pk", flat=True)[:200]:
        done = sweep_advance(sweep_id=sweep_id)
        counts["sweeps"] += 1
        counts["launched"] += done["launched"]
        counts["pruned"] += done["pruned"]
    return counts

