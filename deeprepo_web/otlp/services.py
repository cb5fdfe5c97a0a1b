"""OTLP writes: find the run a resource's spans belong to, keep the items, rebuild the rollouts of
the traces that got something new, in place (through the runs ingest service)."""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

import orjson
from django.db import connection, transaction

from deeprepo_client.formats._genai_trace import rollout_from_items, run_model
from deeprepo_web.accounts.models import Project
from deeprepo_web.otlp.decode import Item
from deeprepo_web.otlp.quiet import otlp_run_reopen
from deeprepo_web.runs import services as run_services
from deeprepo_web.runs.ingest.pg import dumps, execute_binary
from deeprepo_web.runs.ingest.replace import rollouts_replace
from deeprepo_web.runs.models import Run

SOURCE = "otlp"
_LOCK_TRACES = 17  # pg advisory lock namespace: (this, run id) while a run's traces are rebuilt
RUN_ATTRIBUTES = ("deeprepo.run", "deeprepo.run.name", "service.name")


def otlp_run_get(*, project: Project, header: str, resource: dict[str, Any]) -> Run:
    """The run named by the x-deeprepo-run header (a run id of the project, or a run name), else by
    the resource's `deeprepo.run` or `service.name`; a name not seen before makes a new run."""
    name = header.strip()
    if name:
        run = Run.objects.filter(project=project, public_id=name).first()
        if run is not None:
            return run
    else:
        name = next((str(resource[k]) for k in RUN_ATTRIBUTES if resource.get(k)), "") or "otlp"
    name = name[:200]
    config = {k: v for k, v in resource.items() if isinstance(v, str | int | float | bool)}
    run, _ = run_services.run_create(project=project, name=name, source=SOURCE, external_id=name,
                                     config={"otlp_resource": config})
    return run


def _items_store(run: Run, items: list[Item]) -> set[str]:
    """Insert what is new; returns the trace ids that got at least one new item."""
    cols: list[list[Any]] = [[] for _ in range(8)]
    for it in items:
        for col, value in zip(cols, (it.trace_id, it.key, it.kind, it.span_id, it.name, it.start_ns, it.end_ns,
                                     dumps(it.data)), strict=True):
            col.append(value)
    cur = execute_binary(
        "INSERT INTO otlp_otlpitem (run_id, trace_id, key, kind, span_id, name, start_ns, end_ns, data, received_at) "
        "SELECT %b, t, k, kd, s, n, st, en, d::jsonb, now() "
        "FROM unnest(%b::text[], %b::text[], %b::text[], %b::text[], %b::text[], %b::int8[], %b::int8[], %b::text[]) "
        "AS u(t, k, kd, s, n, st, en, d) ON CONFLICT (run_id, trace_id, key) DO NOTHING RETURNING trace_id",
        [run.pk, *cols],
    )
    return {row[0] for row in cur.fetchall()}


def _trace_items(run: Run, trace_ids: list[str]) -> dict[str, list[dict[str, Any]]]:
    with connection.cursor() as cur:
        cur.execute(
            "SELECT trace_id, key, kind, span_id, name, start_ns, end_ns, data::text FROM otlp_otlpitem "
            "WHERE run_id = %s AND trace_id = ANY(%s) ORDER BY trace_id, start_ns",
            [run.pk, trace_ids],
        )
        out: dict[str, list[dict[str, Any]]] = {}
        for trace_id, key, kind, span_id, name, start, end, data in cur.fetchall():
            out.setdefault(trace_id, []).append({"key": key, "kind": kind, "span_id": span_id, "name": name,
                                                 "start_ns": start, "end_ns": end, "data": orjson.loads(data)})
    return out


def otlp_items_ingest(*, run: Run, items: list[Item]) -> dict[str, int]:
    """Keep the items and rebuild the rollout of every trace that got something new.

    Re-sent spans change nothing (items are unique per run, trace and span); a span that arrives
    late rebuilds its trace's rollout from every item stored so far, in place (same rollout id).
    """
    if not items:
        return {"items": 0, "rollouts": 0}
    otlp_run_reopen(run=run)
    with transaction.atomic():
        with connection.cursor() as cur:
            # Two requests carrying spans of one trace must not rebuild it at the same time.
            cur.execute("SELECT pg_advisory_xact_lock(%s, %s)", [_LOCK_TRACES, run.pk])
        touched = sorted(_items_store(run, items))
        if not touched:
            return {"items": 0, "rollouts": 0}
        by_trace = _trace_items(run, touched)
        records = [r for t in touched if (r := rollout_from_items(t, by_trace.get(t, []))) is not None]
        # In place: the rollout keeps its id (its page, its marks) while the trace grows.
        stored = rollouts_replace(run=run, rollouts=records)
        if not run.model:
            model = run_model([asdict(i) for i in items[:50]])
            if model:
                Run.objects.filter(pk=run.pk, model="").update(model=model)
    return {"items": len(items), "rollouts": stored}
