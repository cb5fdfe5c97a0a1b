"""Panels over rollouts: a trajectory excerpt (chosen turns of one rollout), one example side by side
across runs, and how often a search matches per training step."""

from __future__ import annotations

import json
from typing import Any

from deeprepo_web.accounts.models import Project
from deeprepo_web.reports.panels.base import (
    Field,
    PanelError,
    PanelGone,
    PanelKind,
    fmt,
    id_list,
    md_cell,
    md_table,
    num,
    runs_live,
    runs_named,
)
from deeprepo_web.runs.models import Example, Rollout
from deeprepo_web.runs.turns import calls_in_order, turn_count, turns_page
from deeprepo_web.search.selectors import SearchFailed, search_chart, search_scope
from deeprepo_web.search.spec import spec_parse

MAX_TURNS = 12
TEXT_CHARS = 4000
CALL_CHARS = 600
SIDE_RUNS = 6


def _turn_range(value: Any) -> tuple[int, int]:
    """ "3-6" (1-based, inclusive) or "4" -> (start index, count); empty: the first MAX_TURNS."""
    text = str(value or "").strip()
    if not text:
        return 0, MAX_TURNS
    lo, _, hi = text.partition("-")
    try:
        a, b = int(lo), int(hi or lo)
    except ValueError:
        raise PanelError(f"turns: {text[:20]!r} is not FROM-TO, e.g. 2-5") from None
    if a < 1 or b < a:
        raise PanelError("turns: FROM-TO with 1 ≤ FROM ≤ TO")
    if b - a + 1 > MAX_TURNS:
        raise PanelError(f"turns: at most {MAX_TURNS} turns in an excerpt")
    return a - 1, b - a + 1


def _excerpt_clean(project: Project, raw: dict[str, Any]) -> dict[str, Any]:
    run = runs_named(project, id_list(raw.get("run"))[:1])[0]
    try:
        rid = int(str(raw.get("rollout") or "").strip().lstrip("#"))
    except ValueError:
        raise PanelError("rollout: the rollout's number (as in its URL)") from None
    if not Rollout.objects.filter(run=run, pk=rid).exists():
        raise PanelError(f"rollout: no rollout #{rid} in run {run.name[:60]!r}")
    _turn_range(raw.get("turns"))
    return {"run": run.public_id, "rollout": rid, "turns": str(raw.get("turns") or "").strip()[:20]}


def excerpt_compute(project: Project, params: dict[str, Any]) -> dict[str, Any]:
    run = runs_live(project, [params.get("run", "")])[0]
    rollout = Rollout.objects.select_related("example").filter(run=run, pk=int(params.get("rollout") or 0)).first()
    if rollout is None:
        raise PanelGone(f"rollout #{params.get('rollout')} was deleted; this panel has nothing to show")
    start, count = _turn_range(params.get("turns"))
    turns = []
    for t in turns_page(rollout=rollout, start=start, limit=count):
        calls = [{"name": c.name, "output": (c.output or "")[:CALL_CHARS],
                  "arguments": (c.arguments if isinstance(c.arguments, str)
                                else json.dumps(c.arguments, ensure_ascii=False))[:CALL_CHARS]}
                 for c in calls_in_order(t)[:8]]
        turns.append({"index": t.index, "role": t.role, "content": t.content[:TEXT_CHARS],
                      "cut": len(t.content) > TEXT_CHARS or bool(t.content_blob), "calls": calls})
    return {"run": run.name, "run_id": run.public_id, "rollout": rollout.pk, "example": rollout.example.key[:200],
            "reward": num(rollout.reward), "num_turns": rollout.num_turns, "turns": turns,
            "all_turns": turn_count(rollout),
            "final_answer": rollout.final_answer[:TEXT_CHARS]}


def turn_counts(data: dict[str, Any]) -> str:
    """"6 model turns, 13 turns in all": the two counts a trajectory has, named (older frozen data has one)."""
    out = f"{data['num_turns']} model turns"
    return out if data.get("all_turns") is None else f"{out}, {data['all_turns']} turns in all"


def excerpt_markdown(params: dict[str, Any], data: dict[str, Any]) -> str:
    out = [f"_Rollout #{data['rollout']} of {md_cell(data['run'])}, example {md_cell(data['example'])}, "
           f"reward {fmt(data.get('reward'))}, {turn_counts(data)}_", ""]
    for t in data.get("turns", []):
        out.append(f"**Turn {t['index'] + 1} · {t['role']}**")
        out += ["", "```", t["content"].replace("```", "ʼʼʼ"), "```"]
        out += [f"- `{c['name']}` → {md_cell(c['output'][:200])}" for c in t["calls"]]
        out.append("")
    return "\n".join(out)


def _side_clean(project: Project, raw: dict[str, Any]) -> dict[str, Any]:
    runs = runs_named(project, id_list(raw.get("runs")), at_least=2)[:SIDE_RUNS]
    key = str(raw.get("example") or "").strip()[:1000]
    if not key:
        raise PanelError("example: the example's key")
    if not Rollout.objects.filter(run__in=runs, example__project=project, example__key=key).exists():
        raise PanelError(f"example: none of these runs has a rollout of {key[:60]!r}")
    return {"runs": [r.public_id for r in runs], "example": key}


def side_compute(project: Project, params: dict[str, Any]) -> dict[str, Any]:
    runs = runs_live(project, params.get("runs") or [])
    example = Example.objects.filter(project=project, key=params.get("example", "")).first()
    if example is None:
        raise PanelGone("the example was deleted; this panel has nothing to show")
    cols = []
    for run in runs:
        r = Rollout.objects.filter(run=run, example=example).order_by("sample_index", "id").first()
        cols.append({"run": run.name, "rollout": r.pk if r else None, "reward": num(r.reward) if r else None,
                     "turns": r.num_turns if r else None, "answer": (r.final_answer[:TEXT_CHARS] if r else ""),
                     "error": (r.error[:400] if r else "")})
    return {"example": example.key[:1000], "prompt": str(example.prompt or "")[:TEXT_CHARS], "cols": cols}


def side_markdown(params: dict[str, Any], data: dict[str, Any]) -> str:
    rows = [[c["run"], fmt(c["reward"]), str(c["turns"] or "—"), c["answer"][:300] or "—"] for c in data["cols"]]
    return f"Example `{data['example'][:200]}`\n\n" + md_table(["Run", "Reward", "Model turns", "Final answer"], rows)


def _search_clean(project: Project, raw: dict[str, Any]) -> dict[str, Any]:
    params = {k: str(raw.get(k) or "").strip()[:500] for k in ("q", "mode", "in", "run", "tool", "stop", "label")}
    spec = spec_parse(params)
    if spec.errors:
        raise PanelError(spec.errors[0])
    if not spec.narrowed:
        raise PanelError("q: what to count (a word, a phrase, a tool...)")
    if spec.run:
        params["run"] = runs_named(project, [spec.run])[0].public_id
    return {k: v for k, v in params.items() if v}


def search_compute(project: Project, params: dict[str, Any]) -> dict[str, Any]:
    spec = spec_parse(params)
    scope = search_scope(project=project, spec=spec)
    if spec.run and scope.empty:
        raise PanelGone(f"run {spec.run} was deleted; this panel has nothing to show")
    try:
        counts, sample = search_chart(scope=scope, spec=spec)
    except SearchFailed as exc:
        raise PanelError(str(exc)) from None
    out = []
    for run_id, per_step in sorted(counts.items(), key=lambda kv: -sum(m for m, _ in kv[1].values()))[:8]:
        steps = sorted(s for s in per_step if s is not None)
        row = {"run": scope.runs[run_id].name, "steps": steps,
               "share": [per_step[s][0] / per_step[s][1] if per_step[s][1] else None for s in steps],
               "matched": sum(m for m, _ in per_step.values()), "total": sum(t for _, t in per_step.values())}
        if sample:  # the shares are the sample's; the run's figures, estimated from it
            row.update(matched=sample.estimated, total=sample.rollouts, tested=sample.tested)
        out.append(row)
    return {"query": spec.q or spec.tool or spec.label, "runs": out}


def search_markdown(params: dict[str, Any], data: dict[str, Any]) -> str:
    rows = [[r["run"], ("≈ " if r.get("tested") else "") + str(r["matched"]), str(r["total"]),
             f"{100 * r['matched'] / r['total']:.1f}%" if r["total"] else "—"] for r in data.get("runs", [])]
    return f"Rollouts matching `{data.get('query', '')}`\n\n" + md_table(["Run", "Matching", "Rollouts", "Share"], rows)


KINDS = [
    PanelKind("excerpt", "Trajectory excerpt", (
        Field("run", "Run (id or name)", "run"), Field("rollout", "Rollout #"),
        Field("turns", "Turns", help="e.g. 2-5, numbered as the trajectory numbers all turns (at most 12); empty: the first 12"),
    ), _excerpt_clean, excerpt_compute, excerpt_markdown, hint="chosen turns of one rollout"),
    PanelKind("side_by_side", "Example side by side", (
        Field("runs", "Runs (ids or names)", "runs"), Field("example", "Example key"),
    ), _side_clean, side_compute, side_markdown, hint="one example's rollout in each run"),
    PanelKind("search_counts", "Search counts per step", (
        Field("q", "Search"), Field("run", "Run (optional)", "run"), Field("tool", "Tool (optional)"),
    ), _search_clean, search_compute, search_markdown, hint="how often a pattern occurs over training"),
]
