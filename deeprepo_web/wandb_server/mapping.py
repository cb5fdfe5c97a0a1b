"""Where a W&B run lives here.

The API key decides the project: a W&B entity is only echoed back (the viewer's entity is the
project's slug). A W&B project becomes the tag `wandb:<project>` on the run, so one of our projects
can hold several W&B projects and the runs table filters them by tag. The W&B run id (8 characters
the SDK makes, or `id=` / WANDB_RUN_ID) is the run's external id together with its W&B project,
so a resumed run, a second writer in shared mode or a re-sent request finds the same run.
"""

from __future__ import annotations

from typing import Any

from deeprepo_web.accounts.models import Project
from deeprepo_web.runs import services as run_services
from deeprepo_web.runs.models import FINAL_RUN_STATUSES, Run, RunStatus

SOURCE = "wandb"
DEFAULT_PROJECT = "uncategorized"  # what W&B calls runs logged without a project
PROJECT_TAG = "wandb:"
GROUP_TAG = "group:"
JOB_TYPE_TAG = "job_type:"


def wandb_project(name: str | None) -> str:
    return (name or "").strip()[:150] or DEFAULT_PROJECT


def external_id(project: str, run_name: str) -> str:
    return f"{wandb_project(project)}/{run_name}"[:200]


def run_find(*, project: Project, wb_project: str | None, name: str) -> Run | None:
    return Run.objects.filter(project=project, source=SOURCE,
                              external_id=external_id(wandb_project(wb_project), name)).first()


def run_get_or_create(*, project: Project, wb_project: str | None, name: str) -> tuple[Run, bool]:
    """The run, made if the SDK writes to one it never announced (a file stream after our database
    lost it, a second writer first to arrive): nothing it sends is refused or lost."""
    wb = wandb_project(wb_project)
    return run_services.run_create(project=project, name=name, source=SOURCE, external_id=external_id(wb, name),
                                   tags=[PROJECT_TAG + wb])


def _tags(run: Run, wb_project: str, fields: dict[str, Any]) -> list[str]:
    """The user's W&B tags, plus ours for the W&B project, group and job type (kept across updates
    that do not name them)."""
    ours = (PROJECT_TAG, GROUP_TAG, JOB_TYPE_TAG)
    kept = [t for t in run.tags if t.startswith(ours)]
    user = [t for t in run.tags if not t.startswith(ours)]
    if fields.get("tags") is not None:
        user = [str(t)[:200] for t in fields["tags"]]
    extra = {PROJECT_TAG: wb_project, GROUP_TAG: fields.get("groupName"), JOB_TYPE_TAG: fields.get("jobType")}
    for prefix, value in extra.items():
        if value:
            kept = [t for t in kept if not t.startswith(prefix)] + [f"{prefix}{value}"[:200]]
    return list(dict.fromkeys(user + kept))


def metric_axes(wandb_config: Any) -> dict[str, str]:
    """{key or glob: step metric} from the `m` list the SDK keeps in config `_wandb` (every version
    here: 0.17.9's Python sender and wandb-core): MetricRecord fields by number, 1 the name, 2 a glob,
    5 the 1-based position of its step metric in the same list."""
    value = wandb_config.get("value") if isinstance(wandb_config, dict) else None
    records = value.get("m") if isinstance(value, dict) else None
    if not isinstance(records, list):
        return {}
    names = [str(r.get("1") or r.get("2") or "") if isinstance(r, dict) else "" for r in records]
    out = {}
    for name, record in zip(names, records, strict=True):
        at = record.get("5") if isinstance(record, dict) else None
        if name and isinstance(at, int) and not isinstance(at, bool) and 1 <= at <= len(names) and names[at - 1]:
            out[name] = names[at - 1]
    return out


def run_upsert(*, project: Project, fields: dict[str, Any], config: dict[str, Any] | None) -> tuple[Run, bool]:
    """UpsertBucket: make the run or update what the SDK sent (config is sent whole each time)."""
    wb = wandb_project(fields.get("modelName"))
    name = str(fields.get("name") or "").strip()[:120]
    run, created = run_get_or_create(project=project, wb_project=wb, name=name)
    changes: dict[str, Any] = {"tags": _tags(run, wb, fields)}
    if fields.get("displayName"):
        changes["name"] = str(fields["displayName"])[:500]
    if fields.get("notes") is not None or fields.get("description") is not None:
        changes["notes"] = str(fields.get("notes") or fields.get("description") or "")
    if config is not None:
        changes["config"] = config
    run = run_services.run_update(run=run, **changes)
    return run, created


def run_resume(*, run: Run) -> Run:
    """The SDK asks for a run's resume status only when it is about to continue it: going again."""
    if run.status in FINAL_RUN_STATUSES:
        run = run_services.run_update(run=run, status=RunStatus.RUNNING, finished_at=None)
    return run
