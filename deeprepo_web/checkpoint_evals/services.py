"""Checkpoint-eval rules: create one, and beat's scan that launches an eval per new checkpoint.

The scan looks at each enabled rule's run: new artifacts of the rule's kind (by id, past its
watermark) or new multiples of N among the run's steps. Each checkpoint becomes one eval job
through the jobs services, its run linked to the training run at that step (parent +
checkpoint_step), so the run page's "Evals of checkpoints" and the Checkpoints tab list it.
More checkpoints at once than the rule's cap: the newest are evaluated, the rest skipped, and
the rule says so.
"""

from __future__ import annotations

import re
import string
from datetime import timedelta
from typing import Any

from django.db import IntegrityError, transaction
from django.db.models import Max, Q
from django.utils import timezone

from deeprepo_web.artifacts.models import Artifact, ArtifactStatus
from deeprepo_web.checkpoint_evals.errors import RuleInputError
from deeprepo_web.checkpoint_evals.models import CheckpointEval, CheckpointRule, Trigger
from deeprepo_web.jobs.models import Cluster, Job, JobTemplate, TemplateKind
from deeprepo_web.jobs.params import ParamError, validate_params, validate_schema
from deeprepo_web.jobs.services.errors import JobInputError
from deeprepo_web.jobs.services.launch import job_launch
from deeprepo_web.jobs.services.state import advisory_lock
from deeprepo_web.runs.models import FINAL_RUN_STATUSES, MetricSeries, Run

_LOCK_NAMESPACE = 7_402  # pg advisory locks: (namespace, rule id)
PATH_FIELDS = ("output_dir", "artifact", "step", "run_id")
MAX_AT_ONCE = 50  # the highest cap a rule may set
# A finished run may still upload its last checkpoint: its rules keep looking this long.
GRACE = timedelta(minutes=30)
_LAST_NUMBER = re.compile(r"(\d+)(?!.*\d)")


def _path_check(path_template: str) -> str:
    try:
        fields = [(f, spec, conv) for _, f, spec, conv in string.Formatter().parse(path_template) if f is not None]
    except ValueError as e:
        raise RuleInputError("path_template", str(e)) from None
    if any(spec or conv for _, spec, conv in fields):
        # "{step:>999999999}" would build a giant string: names only.
        raise RuleInputError("path_template", "placeholders take no format (:…) or conversion (!…)")
    bad = [n for n, _, _ in fields if n not in PATH_FIELDS]
    if bad:
        raise RuleInputError("path_template", f"{{{bad[0]}}} is not one of {', '.join('{' + f + '}' for f in PATH_FIELDS)}")
    return path_template


def rule_create(
    *, run: Run, template: JobTemplate, cluster: Cluster, path_param: str, step_param: str = "",
    trigger: str = Trigger.ARTIFACT, every_steps: int | None = None, artifact_kind: str = "checkpoint",
    path_template: str = "{output_dir}/{artifact}", params: dict[str, Any] | None = None,
    max_at_once: int = 10, user: Any = None,
) -> CheckpointRule:
    """Check the rule against the template (the path and step go to real parameters) and save it."""
    project = run.project
    if template.project_id not in (None, project.id):
        raise RuleInputError("template", "not a template of this project")
    if template.kind != TemplateKind.EVAL:
        raise RuleInputError("template", f"{template.name} is a {template.kind} template; pick an eval template")
    if cluster.project_id != project.id:
        raise RuleInputError("cluster", "not a cluster of this project")
    if trigger not in Trigger.values:
        raise RuleInputError("trigger", f"{trigger!r} is not one of {', '.join(Trigger.values)}")
    if trigger == Trigger.STEPS and (not isinstance(every_steps, int) or every_steps < 1):
        raise RuleInputError("every_steps", "give N ≥ 1 (a checkpoint every N steps)")
    if not 1 <= max_at_once <= MAX_AT_ONCE:
        raise RuleInputError("max_at_once", f"must be between 1 and {MAX_AT_ONCE}")
    if trigger == Trigger.STEPS and "{artifact}" in path_template:
        raise RuleInputError("path_template", "{artifact} names a logged artifact; a steps rule has none "
                                              "(write the path with {step}, e.g. {output_dir}/checkpoints/step-{step})")
    schema = validate_schema(template.params_schema)
    names = {p["name"] for p in schema}
    for field, name in (("path_param", path_param), ("step_param", step_param)):
        if name and name not in names:
            raise RuleInputError(field, f"{template.name} has no parameter {name!r} (it has {', '.join(sorted(names))})")
    if not path_param:
        raise RuleInputError("path_param", "name the template parameter that gets the checkpoint's path")
    try:
        # A trial launch's values: what every eval will be checked against.
        values = validate_params(schema, {**(params or {}), path_param: "/x", **({step_param: 0} if step_param else {})})
    except ParamError as e:
        raise RuleInputError(e.field, e.message) from e
    params = {k: v for k, v in values.items() if k in (params or {})}
    rule = CheckpointRule.objects.create(
        project=project, run=run, template=template, cluster=cluster, created_by=user, trigger=trigger,
        every_steps=every_steps if trigger == Trigger.STEPS else None, artifact_kind=artifact_kind,
        path_param=path_param, step_param=step_param, path_template=_path_check(path_template), params=params,
        max_at_once=max_at_once,
    )
    return rule


def _run_step(run_id: int) -> int | None:
    return MetricSeries.objects.filter(run_id=run_id).aggregate(m=Max("last_step"))["m"]


def _found(rule: CheckpointRule) -> tuple[list[tuple[int, str]], int, dict[str, int]]:
    """The newest `max_at_once` new checkpoints as (step, artifact name), how many are new in all,
    and the watermarks past them."""
    cap = rule.max_at_once
    if rule.trigger == Trigger.STEPS:
        top = _run_step(rule.run_id)
        every = rule.every_steps or 1
        if top is None or top <= rule.last_step:
            return [], 0, {}
        steps = range((rule.last_step // every + 1) * every if rule.last_step >= 0 else 0, top + 1, every)
        return [(s, "") for s in steps[-cap:]], len(steps), {"last_step": top}
    rows = list(Artifact.objects.filter(run_id=rule.run_id, kind=rule.artifact_kind, status=ArtifactStatus.READY,
                                        pk__gt=rule.last_artifact_id).order_by("pk").values_list("pk", "name")[:5000])
    if not rows:
        return [], 0, {}
    fallback = _run_step(rule.run_id) or 0
    found = []
    for _, name in rows:
        m = _LAST_NUMBER.search(name)
        found.append((int(m.group(1)) if m else fallback, name))
    return sorted(found)[-cap:], len(found), {"last_artifact_id": rows[-1][0]}


def rule_scan(*, rule: CheckpointRule) -> int:
    """Launch evals for the rule's new checkpoints (the newest `max_at_once`). Returns how many."""
    with advisory_lock((_LOCK_NAMESPACE, rule.pk)) as held:
        if not held:
            return 0
        rule.refresh_from_db()
        chosen, total, marks = _found(rule)
        if not total:
            return 0
        note = rule.note
        if total > len(chosen):
            note = (f"{total:,} checkpoints appeared at once; evaluated the newest {len(chosen)} (steps "
                    f"{', '.join(str(s) for s, _ in chosen)}) and skipped {total - len(chosen):,}: this rule "
                    f"launches at most {rule.max_at_once} evals at a time")
        CheckpointRule.objects.filter(pk=rule.pk).update(note=note, **marks)
        return sum(int(_launch(rule, step, name)) for step, name in chosen)


def _launch(rule: CheckpointRule, step: int, artifact: str) -> bool:
    train_job = Job.objects.filter(run_id=rule.run_id).only("output_dir").first()
    path = rule.path_template.format_map({"output_dir": train_job.output_dir if train_job else "",
                                          "artifact": artifact, "step": step, "run_id": rule.run.public_id})
    values = {**rule.params, rule.path_param: path, **({rule.step_param: step} if rule.step_param else {})}
    try:
        with transaction.atomic():
            row = CheckpointEval.objects.create(rule=rule, step=step, path=path[:2000])
            try:
                with transaction.atomic():
                    job = job_launch(project=rule.project, template=rule.template, cluster=rule.cluster, params=values,
                                     user=rule.created_by, name=f"{rule.run.name} eval @ step {step}")
            except JobInputError as e:
                CheckpointEval.objects.filter(pk=row.pk).update(error=f"{e.field}: {e.message}")
                return False
            CheckpointEval.objects.filter(pk=row.pk).update(job=job)
            # The link that fills "Evals of checkpoints" and the Checkpoints tab.
            if job.run is not None:
                Run.objects.filter(pk=job.run.pk).update(parent_id=rule.run_id, checkpoint_step=step)
    except IntegrityError:
        return False  # this step was evaluated already (an artifact logged twice)
    return True


def rules_scan() -> dict[str, int]:
    """Beat: every enabled rule whose run is live, or ended recently (a last checkpoint may follow)."""
    recent = timezone.now() - GRACE
    rules = CheckpointRule.objects.filter(enabled=True).filter(
        ~Q(run__status__in=FINAL_RUN_STATUSES) | Q(run__finished_at__isnull=True) | Q(run__finished_at__gte=recent)
    ).select_related("run", "project", "template", "cluster", "created_by")[:500]
    counts = {"rules": 0, "launched": 0}
    for rule in rules:
        counts["rules"] += 1
        counts["launched"] += rule_scan(rule=rule)
    return counts
