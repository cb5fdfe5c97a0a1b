"""Rollouts with their examples, turns and tool calls: unnest arrays in, COPY for rollouts and their
turns documents."""

from __future__ import annotations

import hashlib
import json
from typing import Any

import psycopg
from django.conf import settings
from django.db import connection, transaction
from django.utils import timezone

from deeprepo_web.analysis import behaviour as behaviour_stats
from deeprepo_web.runs.ingest.blobs import blob_refs_write, body_split
from deeprepo_web.runs.ingest.images import images_offload
from deeprepo_web.runs.ingest.pg import copy_binary, dumps, execute_binary, next_ids
from deeprepo_web.runs.models import Run
from deeprepo_web.runs.turndoc import call_entry, turn_entry
from deeprepo_web.text import clean_text


# Array parameters must be of one Python type: parsers and callers mix 1 and 1.0 freely.
def _float(value: Any) -> float | None:
    return None if value is None else float(value)


def _int(value: Any) -> int | None:
    return None if value is None else int(value)


def rollout_uid(record: dict[str, Any]) -> str:
    """The client's uid, or a hash of the content: the same rollout sent twice is stored once."""
    uid = record.get("uid")
    if uid:
        return str(uid)[:64]
    canonical = json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8", "replace")).hexdigest()


def example_key_hash(key: str) -> str:
    """How an Example is found by its key (Example.key_hash): keys can be long, hashes index well."""
    return hashlib.sha256(key.encode("utf-8", "replace")).hexdigest()




def _examples_upsert(cur: Any, run: Run, records: list[dict[str, Any]]) -> dict[str, int]:
    by_hash: dict[str, tuple[str, Any, str, Any]] = {}
    for r in records:
        key = r["example_key"]
        h = example_key_hash(key)
        if h not in by_hash or (by_hash[h][1] is None and r.get("prompt") is not None):
            by_hash[h] = (key, r.get("prompt"), r.get("oracle") or "", r.get("example_info") or {})
    hashes = sorted(by_hash)
    keys = [by_hash[h][0] for h in hashes]
    prompts = [None if by_hash[h][1] is None else dumps(by_hash[h][1]) for h in hashes]
    oracles = [by_hash[h][2] for h in hashes]
    infos = [dumps(by_hash[h][3]) for h in hashes]
    # New examples only: ON CONFLICT DO NOTHING locks no row that exists. (DO UPDATE ... WHERE locks
    # every conflicting row even when it changes nothing, so concurrent batches of the same examples,
    # a GRPO step's groups, waited for each other's whole transaction, one at a time.)
    execute_binary(
        "INSERT INTO runs_example (project_id, environment, key, key_hash, prompt, oracle, info, created_at) "
        "SELECT %b, %b, k, h, p::jsonb, o, i::jsonb, now() "
        "FROM unnest(%b::text[], %b::text[], %b::text[], %b::text[], %b::text[]) AS u(k, h, p, o, i) "
        "ON CONFLICT (project_id, environment, key_hash) DO NOTHING",
        [run.project_id, run.environment, keys, hashes, prompts, oracles, infos],
    )
    if any(p is not None for p in prompts) or any(oracles):
        # A stored example without a prompt (or oracle) takes the first one sent; only the rows that
        # need it are locked, in id order (two batches filling the same examples cannot deadlock).
        execute_binary(
            "WITH todo AS (SELECT e.id, u.p, u.o FROM runs_example e "
            "JOIN unnest(%b::text[], %b::text[], %b::text[]) AS u(h, p, o) ON e.key_hash = u.h "
            "WHERE e.project_id = %b AND e.environment = %b "
            "AND ((e.prompt IS NULL AND u.p IS NOT NULL) OR (e.oracle = '' AND u.o <> '')) "
            "ORDER BY e.id FOR UPDATE OF e) "
            "UPDATE runs_example e SET prompt = COALESCE(e.prompt, todo.p::jsonb), "
            "oracle = CASE WHEN e.oracle = '' THEN todo.o ELSE e.oracle END FROM todo WHERE e.id = todo.id",
            [hashes, prompts, oracles, run.project_id, run.environment],
        )
    cur.execute(
        "SELECT key_hash, id FROM runs_example WHERE project_id = %s AND environment = %s AND key_hash = ANY(%s)",
        [run.project_id, run.environment, hashes],
    )
    return dict(cur.fetchall())



def _count_calls(calls: list[dict[str, Any]]) -> int:
    return sum(1 + _count_calls(c.get("sub_calls") or []) for c in calls)


def rollout_behaviour(record: dict[str, Any], walk: behaviour_stats.RolloutWalk) -> dict[str, Any]:
    """Behaviour counts of one rollout record (from its walk), kept in Rollout.metrics["behaviour"].

    Computed here, from the record already in memory, so pages never walk turns and tool calls.
    Its only text (tool and model names, an error line) comes from the model: cleaned for jsonb.
    """
    out = behaviour_stats.rollout_counts(record, walk)
    out["tool_calls"] = {clean_text(name): n for name, n in out["tool_calls"].items()}
    if "sub_tokens" in out:
        out["sub_tokens"] = {clean_text(model): v for model, v in out["sub_tokens"].items()}
    if "repeated_error" in out:
        out["repeated_error"] = clean_text(out["repeated_error"])
    return out


def rollout_facts(walk: behaviour_stats.RolloutWalk) -> tuple[str, str]:
    """(tools, tool_errors) of the rollout row, as jsonb text: the distinct names of its tool calls
    (nested ones too), sorted, and [tool, turn index, error line, its signature] per call that failed,
    in order. Kept on the row so that search's tool filter and the run's error signatures read no turn
    or call row (docs/scale.md, the folded layout's step 2)."""
    if not walk.names:
        return "[]", "[]"
    errors = [[clean_text(name), turn, clean_text(line), clean_text(behaviour_stats.error_signature(line))]
              for name, turn, line in walk.failed]
    return dumps(sorted(clean_text(n) for n in walk.names)), dumps(errors) if errors else "[]"


_ROLLOUT_FIELDS = ("uid", "example_id", "step", "sample_index", "reward", "reward_components", "advantage",
                   "num_turns", "input_tokens", "output_tokens", "cost", "is_truncated", "stop_condition", "error",
                   "duration", "final_answer", "metrics", "tools", "tool_errors", "error_sig", "created_at", "run_id")
_ROLLOUT_COLUMNS = ", ".join(_ROLLOUT_FIELDS)


def _tokens(r: dict[str, Any], turns: list[dict[str, Any]], field: str) -> int | None:
    """The rollout's own count, else the sum of its turns' (OTLP and agent traces count per model
    call): the table, Compare and the tokens chart read the rollout's column."""
    own = _int(r.get(field))
    if own is not None:
        return own
    counts = [n for t in turns if isinstance(t, dict) and (n := _int(t.get(field))) is not None]
    return sum(counts) if counts else None


def _rollout_row(r: dict[str, Any], uid: str, example_id: int, now: Any, run: Run) -> tuple[Any, ...]:
    turns = r.get("turns") or []
    walk = behaviour_stats.rollout_walk(r)  # one walk over the calls: behaviour counts and the row's facts
    num_turns = r.get("num_turns")
    error = r.get("error") or ""
    if num_turns is None:
        num_turns = sum(1 for t in turns if t.get("role") == "assistant")
    return (
        uid, example_id, _int(r.get("step")), _int(r.get("sample_index")), _float(r.get("reward")),
        dumps(r.get("reward_components") or {}), _float(r.get("advantage")), _int(num_turns),
        _tokens(r, turns, "input_tokens"), _tokens(r, turns, "output_tokens"), _float(r.get("cost")),
        bool(r.get("is_truncated")), (r.get("stop_condition") or "")[:200], error,
        _float(r.get("duration")), r.get("final_answer") or "",
        dumps({**(r.get("metrics") or {}), "behaviour": rollout_behaviour(r, walk)}), *rollout_facts(walk),
        behaviour_stats.error_signature(error), now, run.pk,
    )


def _rollouts_copy(cur: Any, rows: list[tuple[Any, ...]]) -> dict[str, int]:
    """New rollouts (the common case) by COPY with ids drawn ahead; {uid: id}. Raises
    UniqueViolation (this savepoint undone) when one of them is stored already."""
    ids = next_ids(cur, "runs_rollout", len(rows))
    with transaction.atomic(), copy_binary("runs_rollout", ("id", *_ROLLOUT_FIELDS)) as copy:
        for rid, row in zip(ids, rows, strict=True):
            copy.write_row((rid, *row))
    return {row[0]: rid for rid, row in zip(ids, rows, strict=True)}


def _rollouts_insert_new(rows: list[tuple[Any, ...]]) -> dict[str, int]:
    """A batch seen before (in part): insert what is missing; {uid: id} of the new ones."""
    cols = [list(c) for c in zip(*rows, strict=True)]
    inserted = execute_binary(
        f"INSERT INTO runs_rollout ({_ROLLOUT_COLUMNS}) "
        "SELECT u, e, s, si, rw, rc::jsonb, adv, nt, it, ot, c, tr, sc, er, d, fa, m::jsonb, tl::jsonb, te::jsonb, "
        "es, ca, rid FROM unnest(%b::text[], %b::bigint[], %b::int[], %b::int[], %b::float8[], %b::text[], %b::float8[], "
        "%b::int[], %b::bigint[], %b::bigint[], %b::float8[], %b::bool[], %b::text[], %b::text[], "
        "%b::float8[], %b::text[], %b::text[], %b::text[], %b::text[], %b::text[], %b::timestamptz[], %b::bigint[]) "
        "AS x(u, e, s, si, rw, rc, adv, nt, it, ot, c, tr, sc, er, d, fa, m, tl, te, es, ca, rid) "
        "ON CONFLICT (run_id, uid) DO NOTHING RETURNING uid, id",
        cols,
    )
    return dict(inserted.fetchall())


def rollouts_ingest(*, run: Run, rollouts: list[dict[str, Any]], body: bytes | None = None) -> int:
    """Store rollouts with their turns and tool calls; returns how many were new.

    Rollouts, turns and tool calls go in by COPY. A batch sent before (a retry) makes the rollout
    COPY hit (run, uid); it is then inserted with ON CONFLICT DO NOTHING and only the rollouts that
    were new get turns and tool calls.
    """
    if not rollouts:
        return 0
    # Every path (API, imports, OTLP) stores inline base64 images in the blob store, here. `body`,
    # the request the records were read from: without a data URL in it nothing is scanned.
    rollouts = images_offload(run=run, rollouts=rollouts, body=body)
    uids = [rollout_uid(r) for r in rollouts]
    now = timezone.now()
    with transaction.atomic(), connection.cursor() as cur, connection.wrap_database_errors:
        example_ids = _examples_upsert(cur, run, rollouts)
        rows: list[tuple[Any, ...]] = []
        seen: set[str] = set()
        for r, uid in zip(rollouts, uids, strict=True):
            if uid not in seen:
                seen.add(uid)
                rows.append(_rollout_row(r, uid, example_ids[example_key_hash(r["example_key"])], now, run))
        try:
            new_ids = _rollouts_copy(cur, rows)
        except psycopg.errors.UniqueViolation:
            new_ids = _rollouts_insert_new(rows)
        if not new_ids:
            return 0
        fresh = [(new_ids.pop(u), r) for r, u in zip(rollouts, uids, strict=True) if u in new_ids]
        refs: set[str] = set()
        _turns_write(cur, fresh, refs)
        blob_refs_write(cur, run, refs)
    return len(fresh)


class _Calls:
    """A turn's tool calls as document entries, nested calls after their parent. A class, not a
    recursive closure: the closure would be a reference cycle holding every entry until the cyclic
    collector ran."""

    def __init__(self, ids: list[int], refs: set[str], limit: int) -> None:
        self.ids = iter(ids)
        self.refs = refs
        self.limit = limit

    def entries(self, calls: list[dict[str, Any]], parent: int | None, out: list[dict[str, Any]]) -> list[dict[str, Any]]:
        limit = self.limit
        for index, call in enumerate(calls):
            call_id = next(self.ids)
            output, blob, size, _ = body_split(call.get("output"), self.refs, limit)
            out.append(call_entry(
                call_id=call_id, parent=parent, index=index, external_id=(call.get("call_id") or "")[:200],
                name=(call.get("name") or "")[:500], arguments=call.get("arguments"), output=output, blob=blob,
                size=size, is_error=bool(call.get("is_error")), duration=_float(call.get("duration")),
                model=(call.get("model") or "")[:500], input_tokens=_int(call.get("input_tokens")),
                output_tokens=_int(call.get("output_tokens")), cost=_float(call.get("cost")),
            ))
            sub_calls = call.get("sub_calls")
            if sub_calls:
                self.entries(sub_calls, call_id, out)
        return out


def _turns_write(cur: Any, fresh: list[tuple[int, dict[str, Any]]], refs: set[str]) -> None:
    """Each rollout's turns and calls as one document (runs/turndoc.py), one COPY row per rollout.
    Turns and calls keep ids of their own, drawn from their sequences: links and marks name them."""
    n_turns = n_calls = 0
    for _, r in fresh:
        turns = r.get("turns") or ()
        n_turns += len(turns)
        n_calls += sum(_count_calls(c) for t in turns if (c := t.get("tool_calls")))
    turn_ids = iter(next_ids(cur, "runs_turn", n_turns))
    limit = settings.DEEPREPO_BLOB_THRESHOLD  # read once: a settings lookup per body showed in profiles
    calls = _Calls(next_ids(cur, "runs_toolcall", n_calls), refs, limit)
    with copy_binary("runs_rolloutturns", ("rollout_id", "doc")) as copy:
        write = copy.write_row
        for rollout_id, r in fresh:
            doc = []
            for index, turn in enumerate(r.get("turns") or ()):
                content, blob, size, images = body_split(turn.get("content"), refs, limit)
                metadata = turn.get("metadata")
                if images:
                    metadata = {**(metadata or {}), "images": [*((metadata or {}).get("images") or []), *images]}
                entry = turn_entry(
                    turn_id=next(turn_ids), index=index, role=(turn.get("role") or "")[:32], content=content,
                    blob=blob, size=size, reasoning=turn.get("reasoning") or "",
                    input_tokens=_int(turn.get("input_tokens")), output_tokens=_int(turn.get("output_tokens")),
                    latency=_float(turn.get("latency")), model=(turn.get("model") or "")[:500], metadata=metadata,
                )
                tool_calls = turn.get("tool_calls")
                if tool_calls:
                    entry["k"] = calls.entries(tool_calls, None, [])
                doc.append(entry)
            if doc:  # a rollout without turns has no document, as the views read it
                write((rollout_id, dumps(doc)))
