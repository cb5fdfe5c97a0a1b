"""rLLM's model gateway traces: its SQLite store (`traces(trace_id, data JSON, created_at)` +
`trace_sessions(trace_id, session_id, created_at)`) and the session JSON its API returns
(`GET /sessions/{id}/traces`: a list of TraceRecords).

A session is one episode: a rollout whose turns are the last call's messages plus its response,
each assistant turn carrying its call's tokens, latency and model. The gateway records no reward
and no step, so the run is an eval-like run of rollouts without rewards. Token id lists are
counted, not stored; logprobs are not kept.
"""

from __future__ import annotations

import sqlite3
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..records import Event, Problem, RolloutRecord, RunEvent
from ._batches import batch_rollouts
from ._chat import last_assistant_text, messages_to_turns
from ._groups import assign_groups
from ._json import load_json, loads
from ._stepfiles import already_sent, read_whole
from ._values import num, short_hash, tokens

# The gateway marks no session's end: while watching, a session with no call for this long is done
# (a rollout is sent once, so sending one mid-episode would freeze it there).
SESSION_SETTLE_SECONDS = 60.0
TRACE_KEYS = frozenset({"trace_id", "session_id", "response_message"})
SQLITE_MAGIC = b"SQLite format 3\x00"


def is_trace(keys: set[str]) -> bool:
    return TRACE_KEYS <= keys


def is_store(path: Path) -> bool:
    try:
        with open(path, "rb") as f:
            if f.read(16) != SQLITE_MAGIC:
                return False
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            names = {r[0] for r in con.execute("SELECT name FROM sqlite_master WHERE type = 'table'")}
        finally:
            con.close()
    except (OSError, sqlite3.Error):
        return False
    return {"traces", "trace_sessions"} <= names


def _session_files(folder: Path) -> list[Path]:
    return sorted(folder.glob("session_*_traces.json"))


def looks_like_folder(path: Path) -> bool:
    return bool(_session_files(path)) or any(is_store(f) for f in path.glob("*.db"))


def _from_store(path: Path) -> tuple[list[dict[str, Any]], list[Problem]]:
    traces: list[dict[str, Any]] = []
    problems: list[Problem] = []
    con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
    try:
        rows = con.execute("SELECT t.trace_id, t.data, s.session_id FROM traces t "
                           "LEFT JOIN trace_sessions s ON s.trace_id = t.trace_id ORDER BY t.created_at").fetchall()
    except sqlite3.Error as e:
        return [], [Problem(str(path), None, f"unreadable gateway store: {e}")]
    finally:
        con.close()
    for trace_id, data, session in rows:
        try:
            rec = loads(data)
        except ValueError as e:
            problems.append(Problem(str(path), None, f"trace {trace_id}: invalid JSON: {e}"))
            continue
        if isinstance(rec, dict):
            rec.setdefault("session_id", session)
            traces.append(rec)
    return traces, problems


def _from_json(path: Path) -> tuple[list[dict[str, Any]], list[Problem]]:
    loaded, problem = load_json(path)
    if problem:
        return [], [problem]
    items = loaded if isinstance(loaded, list) else [loaded]
    return [t for t in items if isinstance(t, dict) and is_trace(set(t))], []


def _episode(session: str, traces: list[dict[str, Any]]) -> RolloutRecord:
    traces = sorted(traces, key=lambda t: num(t.get("timestamp")) or 0.0)
    last = traces[-1]
    msgs = [m for m in last.get("messages") or [] if isinstance(m, dict)]
    if isinstance(last.get("response_message"), dict):
        msgs.append(last["response_message"])
    first_reply = next((i for i, m in enumerate(msgs) if m.get("role") == "assistant"), len(msgs))
    turns = messages_to_turns(msgs[first_reply:])
    assistant = [t for t in turns if t.get("role") == "assistant"]
    if len(assistant) == len(traces):  # one call per assistant turn, in order
        for turn, tr in zip(assistant, traces, strict=True):
            counts = tr.get("token_counts") or {}
            turn["input_tokens"] = tokens(counts.get("prompt"))
            turn["output_tokens"] = tokens(counts.get("completion"))
            lat = num(tr.get("latency_ms"))
            turn["latency"] = lat / 1000 if lat is not None else None
            if tr.get("model"):
                turn["model"] = tr["model"]
    ins = [tokens((t.get("token_counts") or {}).get("prompt")) or 0 for t in traces]
    outs = [tokens((t.get("token_counts") or {}).get("completion")) or 0 for t in traces]
    return {
        "uid": short_hash("rllm-gateway", session, n=32),
        "prompt": msgs[:first_reply],
        "step": None,
        "turns": turns,
        "final_answer": last_assistant_text(turns),
        "input_tokens": tokens(sum(ins)),
        "output_tokens": tokens(sum(outs)),
        "stop_condition": last.get("finish_reason"),
        "is_truncated": last.get("finish_reason") == "length",
        "duration": sum(num(t.get("latency_ms")) or 0.0 for t in traces) / 1000,
        "metrics": {"session_id": session, "calls": len(traces),
                    "token_ids": sum(len(t.get("prompt_token_ids") or []) + len(t.get("completion_token_ids") or [])
                                     for t in traces),
                    "trace_ids": [t.get("trace_id") for t in traces]},
    }


def parse(path: Path, *, partial_ok: bool = False, **_options: Any) -> Iterator[Event]:
    folder = path if path.is_dir() else path.parent
    sources = ([path] if path.is_file() else
               [f for f in sorted(path.glob("*.db")) if is_store(f)] + _session_files(path))
    # a store in WAL mode writes to <db>-wal first: its changes count too
    watched = [*sources, *(w for src in sources if (w := src.with_name(src.name + "-wal")).exists())]
    if sources and all(already_sent(f) for f in watched):
        return  # watch: nothing changed since every session in these files was sent
    by_id: dict[str, dict[str, Any]] = {}
    for src in sources:
        traces, problems = _from_store(src) if is_store(src) else _from_json(src)
        yield from problems
        for t in traces:
            by_id.setdefault(str(t.get("trace_id")), t)  # the store and the API's JSON hold the same traces
    sessions: dict[str, list[dict[str, Any]]] = {}
    for t in by_id.values():
        sessions.setdefault(str(t.get("session_id")), []).append(t)
    models = sorted({str(t["model"]) for t in by_id.values() if t.get("model")})
    stamps = [x for t in by_id.values() if (x := num(t.get("timestamp"))) is not None]
    yield RunEvent("gateway", {"name": folder.name, "kind": "eval", "source": "rllm", "status": "finished",
                               "external_id": f"{folder.name}:gateway", "model": models[0] if len(models) == 1 else "",
                               "started_at": min(stamps, default=None), "finished_at": max(stamps, default=None)})
    held = 0
    if partial_ok:
        now = time.time()
        settled = {s: ts for s, ts in sessions.items()
                   if now - max(num(t.get("timestamp")) or 0.0 for t in ts) >= SESSION_SETTLE_SECONDS}
        held, sessions = len(sessions) - len(settled), settled
    if not held:  # every session goes out now: while the files stay as they are, watch skips them
        for f in watched:
            read_whole(f)
    rollouts = [_episode(s, ts) for s, ts in sorted(sessions.items())]
    assign_groups(rollouts, lambda i: None)
    for r in rollouts:  # no reward: nothing to compare within a group
        r["metrics"].pop("advantage_grpo", None)
        r["advantage"] = None
    yield from batch_rollouts("gateway", rollouts)
