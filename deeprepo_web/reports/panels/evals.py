"""Panels of one eval run: its summary (explorer's eval summary: mean reward with a 95 % CI, pass
rate, components) and its raw summary block, printed the way `vf-eval` prints it."""

from __future__ import annotations

import json
import math
from typing import Any

from deeprepo_web.accounts.models import Project
from deeprepo_web.explorer.evalsummary import run_eval_summary
from deeprepo_web.replica.router import read_cursor
from deeprepo_web.reports.panels.base import Field, PanelKind, fmt, id_list, num, runs_live, runs_named

RAW_EXAMPLES = 20  # the r1/r2 lines list this many examples' rewards
RAW_SAMPLES = 8  # and this many rollouts of each

_AGG_SQL = """
SELECT count(*), avg(reward), stddev_pop(reward), avg(num_turns), stddev_pop(num_turns),
       avg(input_tokens), avg(output_tokens), avg(is_truncated::int), stddev_pop(is_truncated::int),
       count(DISTINCT example_id), min(duration), avg(duration), max(duration)
FROM runs_rollout WHERE run_id = %s
"""
_COMPONENTS_SQL = """
SELECT c.key, avg((c.value #>> '{}')::float8), stddev_pop((c.value #>> '{}')::float8)
FROM runs_rollout r, jsonb_each(r.reward_components) c
WHERE r.run_id = %s AND jsonb_typeof(c.value) = 'number' GROUP BY c.key ORDER BY c.key LIMIT 12
"""
_STOPS_SQL = """
SELECT stop_condition, count(*) FROM runs_rollout WHERE run_id = %s AND stop_condition <> ''
GROUP BY 1 ORDER BY 2 DESC LIMIT 8
"""
# The first examples (in logging order) and their first rollouts, for the r1, r2 ... lines.
_GRID_SQL = """
WITH ex AS (SELECT example_id, min(id) AS first FROM runs_rollout WHERE run_id = %(run)s
            GROUP BY example_id ORDER BY first LIMIT %(ex)s)
SELECT ex.first, r.example_id, r.reward, r.num_turns, r.reward_components
FROM ex JOIN LATERAL (SELECT example_id, reward, num_turns, reward_components FROM runs_rollout
                      WHERE run_id = %(run)s AND example_id = ex.example_id
                      ORDER BY sample_index NULLS LAST, id LIMIT %(n)s) r ON true
ORDER BY ex.first
"""


def _run_param(project: Project, raw: dict[str, Any]) -> dict[str, Any]:
    return {"run": runs_named(project, id_list(raw.get("run"))[:1])[0].public_id}


def eval_summary_compute(project: Project, params: dict[str, Any]) -> dict[str, Any]:
    run = runs_live(project, [params.get("run", "")])[0]
    s = run_eval_summary(run=run)
    head = {"run": run.name, "model": run.model, "environment": run.environment}
    if s is None:
        return {**head, "empty": True}
    def ci(i: Any) -> dict[str, Any] | None:
        return None if i is None else {"mean": num(i.estimate), "lo": num(i.lo), "hi": num(i.hi), "n": i.n}
    return {**head, "n": s.n, "scored": s.scored, "reward": ci(s.reward), "pass_rate": num(s.pass_rate),
            "components": [[k, ci(i)] for k, i in s.components], "turns": num(s.turns),
            "input_tokens": num(s.input_tokens), "output_tokens": num(s.output_tokens), "cost": num(s.cost),
            "errors": s.errors, "capped": s.capped}


def eval_summary_markdown(params: dict[str, Any], data: dict[str, Any]) -> str:
    if data.get("empty"):
        return f"_{data['run']}: no rollouts._"
    r = data.get("reward") or {}
    lines = [f"**{data['run']}** ({data.get('model') or 'model not given'}): {data['n']} rollouts",
             f"- Mean reward {fmt(r.get('mean'))} [95% CI {fmt(r.get('lo'))}, {fmt(r.get('hi'))}]"]
    if data.get("pass_rate") is not None:
        lines.append(f"- Pass rate {100 * data['pass_rate']:.0f}%")
    lines += [f"- {k}: {fmt((i or {}).get('mean'))}" for k, i in data.get("components", [])]
    return "\n".join(lines)


def _grid(cur: Any, run_id: int) -> tuple[int, dict[str, list[list[float | None]]]]:
    """{"reward" | "num_turns" | component: [r1 values, r2 values, ...]} over the first examples."""
    cur.execute(_GRID_SQL, {"run": run_id, "ex": RAW_EXAMPLES, "n": RAW_SAMPLES})
    per_ex: dict[int, list[tuple[Any, ...]]] = {}
    for _, ex, reward, turns, comps in cur.fetchall():
        if isinstance(comps, str):  # Django's connection hands jsonb over as text
            comps = json.loads(comps)
        per_ex.setdefault(ex, []).append((reward, turns, comps if isinstance(comps, dict) else {}))
    width = max((len(v) for v in per_ex.values()), default=0)
    out: dict[str, list[list[float | None]]] = {}
    for i in range(width):
        cells = [rows[i] if i < len(rows) else None for rows in per_ex.values()]
        out.setdefault("reward", []).append([num(c[0]) if c else None for c in cells])
        out.setdefault("num_turns", []).append([num(c[1]) if c else None for c in cells])
        for key in sorted({k for c in cells if c for k in c[2]}):
            out.setdefault(key, []).append([num(c[2].get(key)) if c and _is_num(c[2].get(key)) else None
                                            for c in cells])
    return width, out


def _is_num(v: Any) -> bool:
    return isinstance(v, int | float) and not isinstance(v, bool) and math.isfinite(v)


def raw_summary_compute(project: Project, params: dict[str, Any]) -> dict[str, Any]:
    run = runs_live(project, [params.get("run", "")])[0]
    with read_cursor() as cur:
        cur.execute(_AGG_SQL, [run.pk])
        n, rm, rs, tm, ts, tin, tout, trm, trs, n_ex, dmin, dmean, dmax = cur.fetchone()
        cur.execute(_COMPONENTS_SQL, [run.pk])
        comps = [[k, num(m), num(s)] for k, m, s in cur.fetchall()]
        cur.execute(_STOPS_SQL, [run.pk])
        stops = [[k, c / n] for k, c in cur.fetchall()] if n else []
        width, grid = _grid(cur, run.pk)
    return {"run": run.name, "environment": run.environment, "model": run.model, "n": n, "examples": n_ex,
            "per_example": round(n / n_ex) if n_ex else 0, "reward": [num(rm), num(rs)],
            "turns": [num(tm), num(ts)], "truncated": [num(trm), num(trs)], "components": comps,
            "stops": stops, "input_tokens": num(tin), "output_tokens": num(tout),
            "duration": [num(dmin), num(dmean), num(dmax)], "grid": grid, "width": width}


def _vals(row: list[float | None]) -> str:
    # As vf-eval prints a list of floats: 1.0, 18.0, 0.636.
    return "[" + ", ".join("—" if v is None else repr(round(float(v), 4)) for v in row) + "]"


def _dur(v: float | None) -> str:
    if v is None:
        return "—"
    return f"{v / 60:.0f}m" if v >= 60 else f"{v:.0f}s"


def raw_summary_text(data: dict[str, Any]) -> str:
    """The vf-eval block: avg and std over all rollouts; r1, r2 … list each example's rollouts."""
    out = [f"Environment: {data.get('environment') or '—'}", f"Model: {data.get('model') or '—'}",
           f"Examples: {data.get('examples', 0)}", f"Rollouts per example: {data.get('per_example', 0)}", "",
           "Rewards:"]
    grid = data.get("grid") or {}

    def metric(name: str, mean_sd: list[float | None]) -> None:
        out.append(f"{name}: avg - {fmt(mean_sd[0])}, std - {fmt(mean_sd[1])}")
        out.extend(f"r{i + 1}: {_vals(row)}" for i, row in enumerate(grid.get(name, [])))

    metric("reward", data.get("reward") or [None, None])
    for key, m, s in data.get("components", []):
        metric(key, [m, s])
    metric("num_turns", data.get("turns") or [None, None])
    t = data.get("truncated") or [None, None]
    out += ["Info:", f"is_truncated: avg - {fmt(t[0])}, std - {fmt(t[1])}"]
    if data.get("stops"):
        out.append("stop_conditions: " + ", ".join(f"{k}: {v:.3f}" for k, v in data["stops"]))
    d = data.get("duration") or [None, None, None]
    if d[1] is not None:
        out += ["Timing:", f"generation: min - {_dur(d[0])}, mean - {_dur(d[1])}, max - {_dur(d[2])}"]
    out += ["Usage:", f"input_tokens (avg): {fmt(data.get('input_tokens'))}",
            f"output_tokens (avg): {fmt(data.get('output_tokens'))}"]
    return "\n".join(out)


def raw_summary_markdown(params: dict[str, Any], data: dict[str, Any]) -> str:
    return f"**{data.get('run', '')}**\n\n```\n{raw_summary_text(data)}\n```"


RUN_FIELD = Field("run", "Run (id or name)", "run")
KINDS = [
    PanelKind("eval_summary", "Eval summary", (RUN_FIELD,), _run_param, eval_summary_compute,
              eval_summary_markdown, hint="mean reward with its 95% CI, pass rate, components"),
    PanelKind("raw_summary", "Raw eval output", (RUN_FIELD,), _run_param, raw_summary_compute,
              raw_summary_markdown, hint="a run's summary printed like vf-eval's output"),
]
