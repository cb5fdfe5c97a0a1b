"""A run as W&B's GraphQL API shows it (a "bucket"): what UpsertBucket answers and what a resumed
run reads back (config, summary, how many lines of each file are stored, the last history line)."""

from __future__ import annotations

import json
from typing import Any

from deeprepo_web.runs.models import Run
from deeprepo_web.wandb_server.mapping import GROUP_TAG, JOB_TYPE_TAG, PROJECT_TAG, wandb_project
from deeprepo_web.wandb_server.models import StreamOffset

HISTORY = "wandb-history.jsonl"
EVENTS = "wandb-events.jsonl"
OUTPUT = "output.log"


def project_node(project_slug: str, wb_project: str | None) -> dict[str, Any]:
    name = wandb_project(wb_project)
    return {"id": f"{project_slug}/{name}", "name": name, "entityName": project_slug, "readOnly": False,
            "entity": {"id": project_slug, "name": project_slug, "isTeam": False},
            "_slug": project_slug, "_wb": name}


def wandb_name(run: Run) -> str:
    return run.external_id.split("/", 1)[-1]


def _offsets(run: Run) -> dict[str, StreamOffset]:
    """The first writer's offsets per file (the one without a client id, else the earliest)."""
    out: dict[str, StreamOffset] = {}
    for row in StreamOffset.objects.filter(run=run).order_by("writer", "pk"):
        out.setdefault(row.file, row)
    return out



def bucket_node(run: Run) -> dict[str, Any]:
    offsets = _offsets(run)

    def count(file: str) -> int:
        row = offsets.get(file)
        return int(row.next_offset) if row else 0

    history = offsets.get(HISTORY)
    ours = (PROJECT_TAG, GROUP_TAG, JOB_TYPE_TAG)
    group = next((t[len(GROUP_TAG):] for t in run.tags if t.startswith(GROUP_TAG)), None)
    job_type = next((t[len(JOB_TYPE_TAG):] for t in run.tags if t.startswith(JOB_TYPE_TAG)), None)
    wb = next((t[len(PROJECT_TAG):] for t in run.tags if t.startswith(PROJECT_TAG)), None)
    return {
        "id": run.public_id, "name": wandb_name(run), "displayName": run.name, "description": run.notes,
        "notes": run.notes,
        "config": json.dumps({k: {"value": v} for k, v in (run.config or {}).items()}),
        "summaryMetrics": json.dumps(run.summary or {}),
        # The SDK counts a run as begun only when this holds "t" (W&B keeps its telemetry there).
        "wandbConfig": json.dumps({"t": {}}),
        "tags": [t for t in run.tags if not t.startswith(ours)], "group": group, "jobType": job_type,
        "state": run.status, "stopped": False, "sweepName": None,
        "project": project_node(run.project.slug, wb),
        "historyLineCount": count(HISTORY), "logLineCount": count(OUTPUT), "eventsLineCount": count(EVENTS),
        "historyTail": json.dumps([history.tail] if history is not None and history.tail else []),
        "eventsTail": "[]",
    }
