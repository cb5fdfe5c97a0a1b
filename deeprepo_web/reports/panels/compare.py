"""Panels from compare: the before/after table with its CIs and effects, rewards per example, and
the label rates. All three are compare's own numbers (`comparison_build`), turned into JSON."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

from deeprepo_web.accounts.models import Project
from deeprepo_web.compare import comparison as cmp
from deeprepo_web.compare import pricing
from deeprepo_web.compare.exports import comparison_markdown
from deeprepo_web.compare.options import MIN_RUNS, CompareError, letters
from deeprepo_web.compare.query import comparison_for
from deeprepo_web.compare.rundata import RunData, run_data
from deeprepo_web.compare.views import PALETTE, comparison_context
from deeprepo_web.reports.panels.base import (
    Field,
    PanelError,
    PanelKind,
    id_list,
    md_cell,
    md_table,
    runs_live,
    runs_named,
)
from deeprepo_web.runs.models import Example

OPTION_KEYS = ("baseline", "zero", "pass", "effects")


def _clean(project: Project, raw: dict[str, Any]) -> dict[str, Any]:
    runs = runs_named(project, id_list(raw.get("runs")), at_least=MIN_RUNS)
    params: dict[str, Any] = {"runs": [r.public_id for r in runs]}
    opts = {k: str(raw.get(k) or "").strip()[:500] for k in OPTION_KEYS}
    try:
        comparison_for(project, params["runs"], opts)  # options well-formed and of these runs
    except CompareError as exc:
        raise PanelError(str(exc)) from None
    base = opts.get("baseline")
    if base:  # a name is kept as the run's id, which stays true when the run is renamed
        opts["baseline"] = next((r.public_id for r in runs if base in (r.public_id, r.name)), base)
    return {**params, **{k: v for k, v in opts.items() if v}}


def _comparison(project: Project, params: dict[str, Any]) -> cmp.Comparison:
    runs = runs_live(project, params.get("runs") or [])
    try:
        return comparison_for(project, [r.public_id for r in runs], {k: str(params.get(k) or "") for k in OPTION_KEYS})
    except CompareError as exc:
        raise PanelError(str(exc)) from None


def _runs_json(ctx: dict[str, Any]) -> list[dict[str, Any]]:
    return [{"id": r["data"].run.public_id, "name": r["data"].run.name, "letter": r["data"].letter,
             "model": r["data"].run.model, "kind": r["data"].run.kind, "step": r["data"].step,
             "color": r["color"], "base": r["is_base"]} for r in ctx["runs"]]


def compare_compute(project: Project, params: dict[str, Any]) -> dict[str, Any]:
    c = _comparison(project, params)
    ctx = comparison_context(c, links=False)
    rows = [{"key": item["row"].key, "label": item["row"].label,
             "cells": [{"text": x["cell"].text, "note": x["cell"].note, "delta": x["delta"], "tone": x["tone"]}
                       for x in item["cells"]]} for item in ctx["rows"]]
    effects = [{"label": e["label"], "from": e["a"].run.name, "to": e["b"].run.name, "abs": e["abs"],
                "rel": e["rel"], "ci": e["ci"], "rel_ci": e["rel_ci"], "tone": e["tone"]} for e in ctx["effects"]]
    return {"runs": _runs_json(ctx), "rows": rows, "behaviour": [[label, vals] for label, vals in ctx["behaviour"]],
            "effects": effects, "paired": c.paired_examples,
            "markdown": comparison_markdown(c, title="Before / after")}


def compare_markdown(params: dict[str, Any], data: dict[str, Any]) -> str:
    return str(data.get("markdown") or "")


def _run_data(project: Project, params: dict[str, Any]) -> list[RunData]:
    """Compare's per-run arrays without the table's bootstraps (what these two panels need)."""
    runs = runs_live(project, params.get("runs") or [])
    prices = pricing.price_table(project=project)
    return [run_data(r, letter, zero=None, prices=prices) for r, letter in zip(runs, letters(len(runs)), strict=True)]


def per_example_compute(project: Project, params: dict[str, Any]) -> dict[str, Any]:
    data = _run_data(project, params)
    # per_example_rewards reads only the runs of a comparison; compare keys examples by their row id.
    ids, cells = cmp.per_example_rewards(cast(cmp.Comparison, SimpleNamespace(runs=data)), limit=50)
    names = dict(Example.objects.filter(project=project, pk__in=[int(i) for i in ids]).values_list("pk", "key"))
    return {"runs": [{"name": d.run.name, "letter": d.letter} for d in data],
            "rows": [[names.get(int(i), i)[:200], *line] for i, line in zip(ids, cells, strict=True)]}


def per_example_markdown(params: dict[str, Any], data: dict[str, Any]) -> str:
    header = ["Example"] + [f"{r['letter']} · {r['name']}" for r in data.get("runs", [])]
    return md_table(header, [[str(x) for x in row] for row in data.get("rows", [])])


def label_rates_compute(project: Project, params: dict[str, Any]) -> dict[str, Any]:
    data = _run_data(project, params)
    base = next((i for i, d in enumerate(data) if d.run.public_id == params.get("baseline")), 0)
    rows = cmp.label_rate_rows(data, base)
    runs = [{"id": d.run.public_id, "name": d.run.name, "letter": d.letter, "model": d.run.model, "kind": d.run.kind,
             "step": d.step, "color": PALETTE[i % len(PALETTE)], "base": i == base} for i, d in enumerate(data)]
    return {"runs": runs, "behaviour": [], "effects": [], "paired": 0,
            "rows": [{"key": row.key, "label": row.label,
                      "cells": [{"text": cell.text, "note": cell.note, "delta": cmp.delta_text(delta, row), "tone": ""}
                                for cell, delta in zip(row.cells, row.deltas, strict=True)]} for row in rows]}


def label_rates_markdown(params: dict[str, Any], data: dict[str, Any]) -> str:
    if not data.get("rows"):
        return "_No labels on these runs' rollouts._"
    header = ["Label"] + [r["name"] for r in data["runs"]]
    return md_table(header, [[md_cell(r["label"])] + [c["text"] for c in r["cells"]] for r in data["rows"]])


RUNS_FIELD = Field("runs", "Runs (ids or names, in order)", "runs")
COMPARE_FIELDS = (
    RUNS_FIELD,
    Field("baseline", "Baseline run", help="id or name; the first run when empty"),
    Field("zero", "Zero-X rate", help="tool:NAME or metric:NAME"),
    Field("pass", "Pass threshold", "number"),
    Field("effects", "Effects", help="A>B:Model size effect;B>C:RL training effect"),
)

KINDS = [
    PanelKind("compare", "Before / after table", COMPARE_FIELDS, _clean, compare_compute, compare_markdown,
              hint="compare's table with 95% bootstrap CIs and the effects"),
    PanelKind("per_example", "Rewards per example", (RUNS_FIELD,), _clean, per_example_compute,
              per_example_markdown, hint="each example's rewards, rollouts in order, per run"),
    PanelKind("label_rates", "Label rates", (RUNS_FIELD,), _clean, label_rates_compute, label_rates_markdown,
              hint="the share of rollouts marked with each label, with CIs"),
]
