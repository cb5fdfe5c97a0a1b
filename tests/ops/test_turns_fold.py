"""Upgrade of a filled database across runs 0020 (a rollout's turns and tool calls as one document): the
release before it (git commit BEFORE) makes its schema and stores, through its own ingest, rollouts
that hold every kind of value a turn or a call can have; today's `migrate` folds the rows into
documents and replaces the tables runs_turn and runs_toolcall by views over them. Every row reads back
from the views as it was in the tables, column for column and with its Python type; the documents
are the ones today's ingest writes for the same records; ids drawn after the upgrade go on from the
old sequences."""

from __future__ import annotations

import json
import math
import sys
from typing import Any

import psycopg

from tests.ops.upgrade import ADMIN_URL, DB, REPO, release_filled, run
from tests.runs.test_turn_document import _record

BEFORE = "662f96e"  # main before runs 0020

THRESHOLD = "64"  # DEEPREPO_BLOB_THRESHOLD of both releases' ingest: long bodies go to the blob store
INGEST = """
import django, json, sys
django.setup()
from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
from deeprepo_web.runs.models import Run
print(rollouts_ingest(run=Run.objects.get(name=sys.argv[1]), rollouts=json.loads(sys.argv[2])))
"""


def _rich(uid: str) -> dict[str, Any]:
    """The round-trip test's record (every optional field, nested calls, big bodies, an inline image),
    with one more turn of empty values and a latency of 0."""
    record = _record()
    extra = {"role": "", "content": " ", "latency": 0.0, "tool_calls": [{"name": "", "arguments": False, "output": "0"}]}
    return {**record, "example_key": "ex-fold", "uid": uid, "turns": [*record["turns"], extra]}


# What the release before stored as it came: NaN and Infinity in float8 columns.
ODD = {"example_key": "ex-fold", "uid": "fold-odd", "turns": [
    {"role": "assistant", "content": "odd floats", "latency": float("nan"), "tool_calls": [
        {"name": "inf", "duration": float("inf"), "cost": float("nan")},
        {"name": "neg", "duration": -float("inf"), "cost": -0.5}]}]}
SMALL = [{"example_key": f"ex-w{i}", "uid": f"fold-w{i}", "turns": [
    {"role": "user", "content": f"window {i}"},
    {"role": "assistant", "content": "ok", "tool_calls": [{"name": "t", "arguments": {"i": i}, "output": str(i)}]}]}
    for i in range(3)]

TURN_COLUMNS = ["id", "rollout_id", "index", "role", "content", "content_blob", "content_size", "reasoning",
                "input_tokens", "output_tokens", "latency", "model", "metadata"]
CALL_COLUMNS = ["id", "turn_id", "rollout_id", "parent_id", "index", "call_id", "name", "arguments", "output",
                "output_blob", "output_size", "is_error", "duration", "model", "input_tokens", "output_tokens", "cost"]


def _connect() -> psycopg.Connection:
    return psycopg.connect(f"{ADMIN_URL.rpartition('/')[0]}/{DB}", autocommit=True)


def _all(sql: str, params: Any = None) -> list[tuple[Any, ...]]:
    with _connect() as conn:
        return conn.execute(sql, params).fetchall()


def _one(sql: str, params: Any = None) -> Any:
    rows = _all(sql, params)
    return rows[0][0] if rows else None


def _typed(rows: list[tuple[Any, ...]]) -> list[tuple[Any, ...]]:
    """Rows with each value's Python type beside it (1 == 1.0 == Decimal(1) would hide a changed
    type) and NaN made comparable."""
    return [tuple((type(v).__name__, "NaN" if isinstance(v, float) and math.isnan(v) else v) for v in row)
            for row in rows]


def _ingest(code, data: str, run_name: str, records: list[dict[str, Any]]) -> int:
    out = run([sys.executable, "-c", INGEST, run_name, json.dumps(records)], code, DEEPREPO_DATA_DIR=data,
              DEEPREPO_BLOB_THRESHOLD=THRESHOLD)
    return int(out.splitlines()[-1])


def _columns(table: str) -> list[tuple[str, str]]:
    return [tuple(r) for r in _all("SELECT column_name, data_type FROM information_schema.columns "
                                   "WHERE table_name = %s ORDER BY ordinal_position", [table])]


def _turns() -> list[tuple[Any, ...]]:
    return _typed(_all(f"SELECT {', '.join(TURN_COLUMNS)} FROM runs_turn ORDER BY id"))


def _calls(turn_index: str) -> list[tuple[Any, ...]]:
    return _typed(_all(f"SELECT {', '.join('c.' + c for c in CALL_COLUMNS)}, {turn_index} FROM runs_toolcall c "
                       "ORDER BY c.id"))


def _sequence(table: str) -> int:
    return _one(f"SELECT last_value FROM {table}_id_seq")


def _doc(uid: str) -> list[dict[str, Any]]:
    return _one("SELECT d.doc::json FROM runs_rolloutturns d JOIN runs_rollout r ON r.id = d.rollout_id WHERE r.uid = %s",
                [uid])


def _shape(doc: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """A document with its turn and call ids replaced by their places: two documents of the same
    record written with different ids compare equal."""
    place = {}
    for ti, turn in enumerate(doc):
        place[("t", turn["id"])] = f"t{ti}"
        for ci, call in enumerate(turn.get("k", ())):
            place[("c", call["id"])] = f"t{ti}c{ci}"
    out = []
    for turn in doc:
        calls = [{**c, "id": place[("c", c["id"])], **({"p": place[("c", c["p"])]} if "p" in c else {})}
                 for c in turn.get("k", ())]
        out.append({**turn, "id": place[("t", turn["id"])], **({"k": calls} if "k" in turn else {})})
    return out


def test_a_filled_database_folds_turns_and_calls_into_documents(tmp_path, upgrade_db):
    previous, data = release_filled(BEFORE, tmp_path)
    records = [_rich("fold-rich"), ODD, {"example_key": "ex-fold", "uid": "fold-empty", "turns": []},
               {"example_key": "ex-fold", "uid": "fold-none"}]
    assert _ingest(previous, data, "before-b", records) == 4
    # Rollout ids on both sides of the migration's windows of 50,000 (the first, a middle one, the last).
    _one("SELECT setval(pg_get_serial_sequence('runs_rollout', 'id'), 49998)")
    assert _ingest(previous, data, "before-a", SMALL) == 3
    _one("SELECT setval(pg_get_serial_sequence('runs_rollout', 'id'), 100010)")
    assert _ingest(previous, data, "before-b", [{**r, "uid": r["uid"] + "-late"} for r in SMALL[:2]]) == 2
    assert sorted(_all("SELECT id FROM runs_rollout WHERE uid LIKE 'fold-w%%' ORDER BY id")) == [
        (49999,), (50000,), (50001,), (100011,), (100012,)]
    # Ids a rolled-back batch drew: the sequences are past the tables' largest ids.
    for table in ("runs_turn", "runs_toolcall"):
        _one(f"SELECT setval(pg_get_serial_sequence('{table}', 'id'), (SELECT max(id) + 500 FROM {table}))")

    turn_columns, call_columns = _columns("runs_turn"), _columns("runs_toolcall")
    assert sorted(c for c, _ in turn_columns) == sorted(TURN_COLUMNS)
    assert sorted(c for c, _ in call_columns) == sorted(CALL_COLUMNS)
    turns = _turns()
    calls = _calls("(SELECT t.index FROM runs_turn t WHERE t.id = c.turn_id)")
    assert len(turns) == 5 * 2 * 2 + 7 + 1 + 5 * 2 and len(calls) == 10 + 9 + 2 + 5
    assert all(c[-1][1] is not None for c in calls)  # every call's turn was found
    assert ("float", "NaN") in {t[10] for t in turns}  # the NaN latency was stored as NaN
    assert ("str", "") in [t[3] for t in turns] and ("bool", False) in [c[7] for c in calls]
    top_turn, top_call = max(t[0][1] for t in turns), max(c[0][1] for c in calls)
    seq_turn, seq_call = _sequence("runs_turn"), _sequence("runs_toolcall")
    assert (seq_turn, seq_call) == (top_turn + 500, top_call + 500)

    out = run([sys.executable, "manage.py", "migrate", "--no-input"], REPO, DEEPREPO_DATA_DIR=data)
    assert "Applying runs.0020_turns_document" in out

    relkinds = dict(_all("SELECT relname, relkind FROM pg_class WHERE relname IN "
                         "('runs_turn', 'runs_toolcall', 'runs_rolloutturns')"))
    assert relkinds == {"runs_turn": "v", "runs_toolcall": "v", "runs_rolloutturns": "r"}
    assert [c for c, _ in _columns("runs_turn")] == TURN_COLUMNS
    assert [c for c, _ in _columns("runs_toolcall")] == [*CALL_COLUMNS, "turn_index"]
    # The same types (a view's strings are text where the tables' were varchar(n)).
    as_text = {"character varying": "text"}
    assert dict(_columns("runs_turn")) == {c: as_text.get(t, t) for c, t in turn_columns}
    assert dict(_columns("runs_toolcall")) == {**{c: as_text.get(t, t) for c, t in call_columns}, "turn_index": "integer"}
    # Every row as it was, with its type: the calls' turn_index is their turn's index.
    assert _turns() == turns
    assert _calls("c.turn_index") == calls
    # One document per rollout that had turns.
    assert _one("SELECT count(*) FROM runs_rolloutturns") == 10 + 2 + 3 + 2
    assert _doc("fold-empty") is None and _doc("fold-none") is None

    # What the fold wrote is what today's ingest writes for the same record, key for key.
    assert _ingest(REPO, data, "before-b", [_rich("fold-rich-after")]) == 1
    folded, written = _doc("fold-rich"), _doc("fold-rich-after")
    assert _shape(folded) == _shape(written)
    assert folded[0] == {"id": folded[0]["id"], "i": 0, "r": "user", "c": "only a role and content"}
    assert folded[2]["k"][0]["a"] == {"cmd": "ls", "cwd": None}

    # Ids drawn after the upgrade go on from the old sequences, past every old id.
    new = _typed(_all(f"SELECT {', '.join(TURN_COLUMNS)} FROM runs_turn t WHERE rollout_id = "
                      "(SELECT id FROM runs_rollout WHERE uid = 'fold-rich-after') ORDER BY id"))
    new_calls = _all("SELECT id FROM runs_toolcall WHERE rollout_id = "
                     "(SELECT id FROM runs_rollout WHERE uid = 'fold-rich-after') ORDER BY id")
    assert len(new) == 7 and len(new_calls) == 9
    assert new[0][0][1] == seq_turn + 1 and new_calls[0][0] == seq_call + 1
    assert min(t[0][1] for t in new) > top_turn and min(c[0] for c in new_calls) > top_call
    assert _one("SELECT count(DISTINCT id) = count(*) FROM runs_turn") is True
    assert _one("SELECT count(DISTINCT id) = count(*) FROM runs_toolcall") is True
    # ... and read back like the old rows of the same record (ids and rollout aside).
    old_rich = [t[2:] for t in turns if t[1][1] == _one("SELECT id FROM runs_rollout WHERE uid = 'fold-rich'")]
    assert [t[2:] for t in new] == old_rich
