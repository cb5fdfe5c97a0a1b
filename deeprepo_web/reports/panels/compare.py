"""Panels from compare: the before/after table with its CIs and effects, rewards per example, and
the label rates. All three are compare's own numbers (`comparison_build`), turned into JSON."""

from __future__ import annotations

from typing import Any

from deeprepo_web.accounts.models import Project
from deeprepo_web.compare import comparison as cmp
from deeprepo_web.compare.exports import comparison_markdown
from deeprepo_web.compare.options import MIN_RUNS, CompareError
from deeprepo_web.compare.query import comparison_for
from deeprepo_web.compare.views import comparison_context
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


def per_example_compute(project: Project, params: dict[str, Any]) -> dict[str, Any]:
    c = _comparison(project, params)
    ids, cells = cmp.per_example_rewards(c, limit=50)  # compare keys examples by their row id
    names = dict(Example.objects.filter(project=project, pk__in=[int(i) for i in ids]).values_list("pk", "key"))
    return {"runs": [{"name": d.run.name, "letter": d.letter} for d in c.runs],
            "rows": [[names.get(int(i), i)[:200], *line] for i, line in zip(ids, cells, strict=True)]}


def per_example_markdown(params: dict[str, Any], data: dict[str, Any]) -> str:
    header = ["Example"] + [f"{r['letter']} · {r['name']}" for r in data.get("runs", [])]
    return md_table(header, [[str(x) for x in row] for row in data.get("rows", [])])


def label_rates_compute(project: Project, params: dict[str, Any]) -> dict[str, Any]:
    data = compare_compute(project, params)
    data["rows"] = [r for r in data["rows"] if r["key"].startswith("label:")]
    data.pop("markdown", None)
    data["behaviour"], data["effects"] = [], []
    return data


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
