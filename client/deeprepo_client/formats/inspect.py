"""Inspect AI logs: the `.eval` zip (header.json + samples/*.json) and the `.json` log with inline samples."""

from __future__ import annotations

import re
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..records import Event, Problem, RolloutRecord, RunEvent, RunRecord
from ._batches import batch_rollouts
from ._chat import content_text, last_assistant_text, messages_to_turns
from ._json import loads
from ._values import err_text, num, parse_time, short_hash, tokens
from ._zips import SafeZip, ZipLimits, ZipRejected

LETTERS = {"C": 1.0, "I": 0.0, "P": 0.5, "N": 0.0}
_SAMPLE = re.compile(r"^samples/(.+)_epoch_(\d+)\.json$")
_ATTACH = "attachment://"


def score_value(v: Any) -> float | None:
    if isinstance(v, str):
        if v in LETTERS:
            return LETTERS[v]
        try:
            return float(v)
        except ValueError:
            return None
    return num(v)


def _resolve(v: Any, attachments: dict[str, str]) -> Any:
    """Replace `attachment://<hash>` strings by their text, anywhere inside v."""
    if isinstance(v, str):
        if v.startswith(_ATTACH):
            return attachments.get(v[len(_ATTACH):], v)
        return v
    if isinstance(v, list):
        return [_resolve(x, attachments) for x in v]
    if isinstance(v, dict):
        return {k: _resolve(x, attachments) for k, x in v.items()}
    return v


def _run_record(header: dict[str, Any], fallback: str) -> RunRecord:
    ev = header.get("eval") or {}
    results = header.get("results") or {}
    summary: dict[str, Any] = {}
    for s in results.get("scores") or []:
        for mname, m in (s.get("metrics") or {}).items():
            summary[f"{s.get('name')}/{mname}"] = m.get("value") if isinstance(m, dict) else m
    for k in ("total_samples", "completed_samples"):
        if k in results:
            summary[k] = results[k]
    stats = header.get("stats") or {}
    if stats.get("model_usage"):
        summary["model_usage"] = stats["model_usage"]
    config = {k: ev[k] for k in ("config", "task_args", "model_args", "model_generate_config", "dataset",
                                 "revision", "packages", "scorers", "task_version", "task_file") if k in ev}
    if header.get("plan"):
        config["plan"] = header["plan"]
    rec: RunRecord = {
        "name": str(ev.get("task") or fallback), "kind": "eval", "source": "inspect",
        "status": {"success": "finished", "error": "failed", "cancelled": "cancelled",
                   "started": "running"}.get(str(header.get("status")), "finished"),
        "config": config, "summary": summary,
        "started_at": parse_time(stats.get("started_at") or ev.get("created")),
        "finished_at": parse_time(stats.get("completed_at")),
    }
    ext = ev.get("eval_id") or ev.get("run_id")
    if ext:
        rec["external_id"] = f"{ext}:{ev.get('task_id', '')}"
    if ev.get("model"):
        rec["model"] = str(ev["model"])
    if ev.get("task"):
        rec["environment"] = str(ev["task"])
    if header.get("error"):
        summary["error"] = header["error"]
    return rec


def sample_to_rollout(s: dict[str, Any], ident: str, scorer_order: list[str]) -> RolloutRecord:
    att = s.get("attachments") or {}
    msgs = _resolve(s.get("messages") or [], att)
    turns = messages_to_turns(msgs)
    comps: dict[str, float] = {}
    score_meta: dict[str, Any] = {}
    for name, sc in (s.get("scores") or {}).items():
        val = sc.get("value") if isinstance(sc, dict) else sc
        if isinstance(val, dict):  # a scorer with several values: one component each
            for k, v in val.items():
                if (f := score_value(v)) is not None:
                    comps[f"{name}/{k}"] = f
        elif (f := score_value(val)) is not None:
            comps[name] = f
        if isinstance(sc, dict):
            score_meta[name] = {k: sc[k] for k in ("value", "answer", "explanation") if k in sc}
    reward = None
    for name in scorer_order + list(comps):
        if name in comps:
            reward = comps[name]
            break
    in_tok = out_tok = 0
    for u in (s.get("model_usage") or {}).values():
        in_tok += int(u.get("input_tokens") or 0)
        out_tok += int(u.get("output_tokens") or 0)
    output = s.get("output") or {}
    choices = output.get("choices") or []
    target = s.get("target")
    epoch = s.get("epoch")
    r: RolloutRecord = {
        "uid": short_hash("inspect", ident, s.get("id"), epoch, n=32),
        "example_key": str(s.get("id")),
        "sample_index": int(epoch) if isinstance(epoch, int) else None,
        "prompt": _resolve(s.get("input"), att),
        "oracle": "\n".join(map(str, target)) if isinstance(target, list) else (None if target is None else str(target)),
        "reward": reward,
        "reward_components": comps,
        "turns": turns,
        "final_answer": (output.get("completion") or last_assistant_text(turns)),
        "input_tokens": tokens(in_tok),
        "output_tokens": tokens(out_tok),
        "duration": num(s.get("total_time")),
        "error": err_text(s.get("error")),
        "stop_condition": choices[0].get("stop_reason") if choices and isinstance(choices[0], dict) else None,
        "metrics": {"scores": score_meta, "working_time": s.get("working_time"),
                    "model_usage": s.get("model_usage"), "events": len(s.get("events") or [])},
    }
    info: dict[str, Any] = {}
    if s.get("metadata"):
        info["metadata"] = s["metadata"]
    if s.get("choices"):
        info["choices"] = s["choices"]
    if info:
        r["example_info"] = info
    if r["stop_condition"] in ("max_tokens", "model_length"):
        r["is_truncated"] = True
    return r


def _scorers(header: dict[str, Any]) -> list[str]:
    return [str(s.get("name")) for s in (header.get("eval") or {}).get("scorers") or [] if isinstance(s, dict)]


def parse_eval_zip(path: Path, limits: ZipLimits | None) -> Iterator[Event]:
    try:
        z = SafeZip(path, limits)
    except (ZipRejected, OSError, ValueError) as e:
        yield Problem(str(path), None, f"rejected zip: {e}", fatal=True)
        return
    try:
        names = z.names()
        header: dict[str, Any] = {}
        for hname in ("header.json", "_journal/start.json"):  # a running log has only the journal
            if hname in names:
                try:
                    header = loads(z.read(hname))
                    break
                except ValueError as e:
                    yield Problem(f"{path}!{hname}", None, f"invalid JSON: {e}")
        ref = "eval"
        yield RunEvent(ref, _run_record(header, path.stem))
        order = _scorers(header)
        ident = (header.get("eval") or {}).get("eval_id") or (header.get("eval") or {}).get("run_id") or path.name

        def rollouts() -> Iterator[RolloutRecord | Problem]:
            def sort_key(n: str) -> tuple[int, str, int]:
                m = _SAMPLE.match(n)
                assert m
                sid = m.group(1)
                return (0, f"{int(sid):012d}", int(m.group(2))) if sid.isdigit() else (1, sid, int(m.group(2)))

            for name in sorted((n for n in names if _SAMPLE.match(n)), key=sort_key):
                try:
                    s = loads(z.read(name))
                    yield sample_to_rollout(s, ident, order)
                except ZipRejected:
                    raise
                except Exception as e:
                    yield Problem(f"{path}!{name}", None, f"unreadable sample: {type(e).__name__}: {e}")

        yield from batch_rollouts(ref, rollouts())
    except ZipRejected as e:
        yield Problem(str(path), None, f"rejected zip: {e}", fatal=True)
    finally:
        z.close()


def parse_json_log(path: Path) -> Iterator[Event]:
    try:
        with open(path, "rb") as f:
            log = loads(f.read())
    except (OSError, ValueError) as e:
        yield Problem(str(path), None, f"unreadable JSON: {e}", fatal=True)
        return
    ref = "eval"
    yield RunEvent(ref, _run_record(log, path.stem))
    order = _scorers(log)
    ident = (log.get("eval") or {}).get("eval_id") or (log.get("eval") or {}).get("run_id") or path.name

    def rollouts() -> Iterator[RolloutRecord | Problem]:
        for i, s in enumerate(log.get("samples") or []):
            try:
                yield sample_to_rollout(s, ident, order)
            except Exception as e:
                yield Problem(str(path), None, f"sample {i}: {type(e).__name__}: {e}")

    yield from batch_rollouts(ref, rollouts())


def is_eval_zip(path: Path, head: bytes) -> bool:
    """An Inspect .eval log: a zip with header.json, a journal, or samples/<id>_epoch_<n>.json."""
    if not (head.startswith(b"PK\x03\x04") or head.startswith(b"PK\x05\x06")):
        return False
    try:
        with zipfile.ZipFile(path) as z:
            names = z.namelist()
    except (zipfile.BadZipFile, OSError):
        return False
    return "header.json" in names or "_journal/start.json" in names or any(
        n.startswith("samples/") and "_epoch_" in n for n in names)


def is_json_log(k1: set[str], k2: set[str]) -> bool:
    return "eval" in k1 and bool({"samples", "results", "stats", "plan"} & k1)


def parse(path: Path, *, limits: ZipLimits | None = None, partial_ok: bool = False, **_options: Any) -> Iterator[Event]:
    with open(path, "rb") as f:
        head = f.read(4)
    if head.startswith(b"PK"):
        yield from parse_eval_zip(path, limits)
    else:
        yield from parse_json_log(path)


__all__ = ["parse", "score_value", "content_text"]
