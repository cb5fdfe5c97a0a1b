"""Panels over training: curves of chosen metric keys across runs (smoothing, x-axis), a run's GRPO
health per step, and its checkpoint evals with the examples that flipped."""

from __future__ import annotations

from typing import Any

from deeprepo_web.accounts.models import Project
from deeprepo_web.compare import checkpoints as ckpt
from deeprepo_web.compare.options import CompareError
from deeprepo_web.compare.views import PALETTE
from deeprepo_web.explorer.health import grpo_health
from deeprepo_web.reports.panels.base import (
    Field,
    PanelError,
    PanelKind,
    fmt,
    id_list,
    md_table,
    num,
    number,
    runs_live,
    runs_named,
)
from deeprepo_web.runs import selectors

CURVE_BUCKETS = 300
MAX_KEYS = 4
HEALTH_POINTS = 300


def _curves_clean(project: Project, raw: dict[str, Any]) -> dict[str, Any]:
    runs = runs_named(project, id_list(raw.get("runs")))
    keys = id_list(raw.get("keys")) or ["reward"]
    if len(keys) > MAX_KEYS:
        raise PanelError(f"keys: at most {MAX_KEYS} metric keys in one panel")
    have = {k for r in runs for k in selectors.series_keys(run=r)}
    missing = [k for k in keys if k not in have]
    if missing:
        raise PanelError(f"keys: no run here logged {missing[0][:60]!r}")
    x = str(raw.get("x") or "step")
    if x not in ("step", "time"):
        raise PanelError("x: step or time")
    return {"runs": [r.public_id for r in runs], "keys": keys, "x": x,
            "smoothing": number(raw.get("smoothing"), "smoothing", 0.0, 0.0, 0.99)}


def curves_compute(project: Project, params: dict[str, Any]) -> dict[str, Any]:
    runs = runs_live(project, params.get("runs") or [])
    charts = []
    for key in params.get("keys") or ["reward"]:
        lines = []
        for i, run in enumerate(runs):
            s = selectors.series_downsampled(run=run, key=key, buckets=CURVE_BUCKETS)
            if s is None or not s.steps:
                continue
            xs: list[Any] = s.steps
            if params.get("x") == "time" and s.times and s.times[0] is not None:
                t0 = s.times[0]
                xs = [None if t is None else round((t - t0) / 60, 3) for t in s.times]  # minutes since the first point
            lines.append({"name": run.name, "color": PALETTE[i % len(PALETTE)], "x": xs, "y": s.last,
                          "last": num(s.last[-1]) if s.last else None, "last_x": xs[-1]})
        charts.append({"key": key, "lines": lines})
    return {"charts": charts, "x": params.get("x", "step"), "smoothing": params.get("smoothing", 0.0)}


def curves_markdown(params: dict[str, Any], data: dict[str, Any]) -> str:
    out = []
    for chart in data.get("charts", []):
        rows = []
        for ln in chart["lines"]:
            pts = [(x, y) for x, y in zip(ln["x"], ln["y"], strict=False) if y is not None and x is not None]
            every = max(1, len(pts) // 10)
            shown = pts[::every] + ([pts[-1]] if pts and (len(pts) - 1) % every else [])
            rows += [[ln["name"], f"{x:g}", fmt(y, 4)] for x, y in shown]
        out.append(f"**{chart['key']}**\n\n" + md_table(["Run", data.get("x", "step"), chart["key"]], rows))
    return "\n\n".join(out)


def _run_clean(project: Project, raw: dict[str, Any]) -> dict[str, Any]:
    return {"run": runs_named(project, id_list(raw.get("run"))[:1])[0].public_id}


def health_compute(project: Project, params: dict[str, Any]) -> dict[str, Any]:
    run = runs_live(project, [params.get("run", "")])[0]
    h = grpo_health(run=run).as_dict()
    every = max(1, len(h["step"]) // HEALTH_POINTS)
    return {"run": run.name, **{k: v[::every] for k, v in h.items()}, "n_steps": len(h["step"])}


def health_markdown(params: dict[str, Any], data: dict[str, Any]) -> str:
    steps = data.get("step", [])
    every = max(1, len(steps) // 12)
    rows = [[str(steps[i]), fmt(data["mean"][i]), fmt(data["p10"][i]), fmt(data["p90"][i]),
             "—" if data["frac_dead"][i] is None else f"{100 * data['frac_dead'][i]:.0f}%", fmt(data["turns"][i], 2)]
            for i in range(0, len(steps), every)]
    return md_table(["Step", "Mean reward", "p10", "p90", "Dead groups", "Model turns"], rows)


def _ckpt_clean(project: Project, raw: dict[str, Any]) -> dict[str, Any]:
    return {**_run_clean(project, raw), "pass": number(raw.get("pass"), "pass", 1.0, -1e9, 1e9)}


def checkpoints_compute(project: Project, params: dict[str, Any]) -> dict[str, Any]:
    run = runs_live(project, [params.get("run", "")])[0]
    try:
        prog = ckpt.progression(run=run, threshold=float(params.get("pass", 1.0)))
    except CompareError as exc:
        raise PanelError(str(exc)) from None
    points = [{"step": p.step, "run": p.run.name, "n": p.n, "mean": num(p.ci.estimate), "lo": num(p.ci.lo),
               "hi": num(p.ci.hi), "pass": num(p.pass_rate)} for p in prog.points]
    flips = [{"example": f.example.key[:200], "direction": f.direction, "a": num(f.mean_a), "b": num(f.mean_b)}
             for f in prog.flips[:30]]
    return {"run": run.name, "points": points, "flips": flips, "fail_to_pass": prog.n_fail_to_pass,
            "pass_to_fail": prog.n_pass_to_fail, "shared": prog.n_shared,
            "a": prog.a.step if prog.a else None, "b": prog.b.step if prog.b else None}


def checkpoints_markdown(params: dict[str, Any], data: dict[str, Any]) -> str:
    rows = [[str(p["step"]), p["run"], str(p["n"]), f"{fmt(p['mean'])} ({fmt(p['lo'])}, {fmt(p['hi'])})",
             "—" if p["pass"] is None else f"{100 * p['pass']:.0f}%"] for p in data.get("points", [])]
    out = md_table(["Step", "Eval run", "Rollouts", "Mean reward (95% CI)", "Pass rate"], rows)
    if data.get("a") is not None:
        out += (f"\n\nStep {data['a']} → {data['b']}: {data['fail_to_pass']} examples fail → pass, "
                f"{data['pass_to_fail']} pass → fail.")
    return out


KINDS = [
    PanelKind("curves", "Curves", (
        Field("runs", "Runs (ids or names)", "runs"),
        Field("keys", "Metric keys", help="comma-separated, up to 4; e.g. reward, num_turns"),
        Field("smoothing", "Smoothing (0–0.99)", "number"),
        Field("x", "x-axis", "choice", choices=("step", "time")),
    ), _curves_clean, curves_compute, curves_markdown, hint="metric curves of one or more runs"),
    PanelKind("grpo_health", "GRPO health", (Field("run", "Training run", "run"),), _run_clean, health_compute,
              health_markdown, hint="reward quantiles and dead groups per step"),
    PanelKind("checkpoints", "Checkpoints and flips", (Field("run", "Training run", "run"),
                                                      Field("pass", "Pass threshold", "number")),
              _ckpt_clean, checkpoints_compute, checkpoints_markdown,
              hint="a training run's checkpoint evals and the examples that flipped"),
]
