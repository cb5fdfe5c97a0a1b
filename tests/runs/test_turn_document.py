"""A rollout's turns and tool calls go into one document (runs_rolloutturns, runs/turndoc.py) and come
back out of the views runs_turn and runs_toolcall (runs 0020) through the ORM models Turn and ToolCall
with every field as it was written: what a record leaves out reads as the column's default, nulls
inside metadata and arguments are kept, nested calls keep their parents, big bodies keep a preview,
their blob and their full size. The document itself leaves out default values (its compact format)."""

from __future__ import annotations

import base64
import hashlib

import pytest
from django.db import connection

BIG = "0123456789" * 2_000  # 20,000 characters: past the threshold and past the 16 KB preview
UNICODE = "Grüße, 世界 😀 — naïve"  # non-ASCII: sizes are UTF-8 bytes, not characters
IMAGE = base64.b64encode(bytes(range(256)) * 6).decode()  # 1,536 bytes: big enough to be offloaded


def _sha(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _record() -> dict:
    return {"example_key": "ex-doc", "uid": "doc-rich", "turns": [
        {"role": "user", "content": "only a role and content"},
        {"role": "system"},  # no content at all
        {"role": "assistant", "content": "x" * 100, "reasoning": "let me think", "input_tokens": 123,
         "output_tokens": 2**40, "latency": 0.1 + 0.2, "model": "gpt-test",
         "metadata": {"a": None, "nested": {"b": [1, None, "x"]}, "ok": False},
         "tool_calls": [
             {"call_id": "call-1", "name": "run", "arguments": {"cmd": "ls", "cwd": None}, "output": "a.py\nb.py",
              "duration": 1.5, "cost": 0.0001, "model": "tool-model", "input_tokens": 5, "output_tokens": 6},
             {"name": "noop"},  # no arguments, no output
             {"name": "fail", "arguments": {"x": [None]}, "output": UNICODE * 10, "is_error": True},
             {"name": "batch", "arguments": [], "output": BIG, "sub_calls": [
                 {"name": "llm_query", "arguments": {"prompt": "p"}, "output": "o", "model": "sub",
                  "input_tokens": 1, "output_tokens": 2, "cost": 0.5,
                  "sub_calls": [{"name": "deep", "arguments": "a string argument", "is_error": False}]},
                 {"name": "llm_query", "arguments": None, "is_error": True, "output": "Traceback\nValueError: x"},
             ]},
         ]},
        {"role": "assistant", "content": UNICODE, "input_tokens": 0, "output_tokens": 0,
         "metadata": {}, "model": "", "reasoning": "",
         "tool_calls": [{"name": "zeroes", "arguments": {}, "duration": 0.0, "cost": 0.0, "input_tokens": 0}]},
        {"role": "tool", "content": BIG, "metadata": {"k": None}},
        {"role": "user", "content": f"look: ![chart](data:image/png;base64,{IMAGE}) done"},
    ]}


TURN = dict(content="", content_blob="", content_size=0, reasoning="", input_tokens=None, output_tokens=None,
            latency=None, model="", metadata={})
CALL = dict(parent_id=None, call_id="", arguments=None, output="", output_blob="", output_size=0, is_error=False,
            duration=None, model="", input_tokens=None, output_tokens=None, cost=None)
TURN_FIELDS = ("id", "rollout_id", "index", "role", *TURN)
CALL_FIELDS = ("id", "turn_id", "rollout_id", "index", "name", *CALL)


def _doc(rollout_id: int) -> list:
    from deeprepo_web.runs.models import RolloutTurns

    return RolloutTurns.objects.get(rollout_id=rollout_id).doc


@pytest.fixture
def ingested(team, settings):
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.models import Rollout
    from deeprepo_web.runs.services import run_create

    settings.DEEPREPO_BLOB_THRESHOLD = 64
    run, _ = run_create(project=team.project, name="turn-doc")
    stored = rollouts_ingest(run=run, rollouts=[
        {"example_key": "ex-doc", "uid": "doc-before", "turns": [{"role": "user", "content": "first"}]},
        _record(),
        {"example_key": "ex-doc", "uid": "doc-empty", "turns": []},
        {"example_key": "ex-doc", "uid": "doc-nan", "turns": [
            {"role": "assistant", "content": "c", "latency": float("nan"), "tool_calls": [
                {"name": "inf", "duration": float("inf"), "cost": float("nan")}]}]},
        {"example_key": "ex-doc", "uid": "doc-none"},
    ])
    assert stored == 5
    return {r.uid: r for r in Rollout.objects.filter(run=run)}


def test_turns_come_back_out_of_the_view_as_written(ingested) -> None:
    from deeprepo_web.runs.models import Turn
    from deeprepo_web.storage import blob_get

    rollout = ingested["doc-rich"]
    turns = list(Turn.objects.filter(rollout=rollout).order_by("index").values(*TURN_FIELDS))
    ids = [t.pop("id") for t in turns]
    assert ids == sorted(ids) and len(set(ids)) == 6
    first = Turn.objects.get(rollout=ingested["doc-before"])
    assert first.id < ids[0]  # ids drawn in order across the batch
    latency = turns[2]["latency"]
    assert latency == 0.1 + 0.2 and latency != 0.3  # a float's every bit
    image = hashlib.sha256(base64.b64decode(IMAGE)).hexdigest()
    marker = f"look: ![chart](blob:{image}) done"
    base = dict(TURN, rollout_id=rollout.id)
    assert turns == [
        dict(base, index=0, role="user", content="only a role and content", content_size=23),
        dict(base, index=1, role="system"),
        dict(base, index=2, role="assistant", content="x" * 100, content_blob=_sha("x" * 100), content_size=100,
             reasoning="let me think", input_tokens=123, output_tokens=2**40, latency=0.1 + 0.2, model="gpt-test",
             metadata={"a": None, "nested": {"b": [1, None, "x"]}, "ok": False}),
        dict(base, index=3, role="assistant", content=UNICODE, content_size=len(UNICODE.encode()),
             input_tokens=0, output_tokens=0),
        dict(base, index=4, role="tool", content=BIG[:16 * 1024], content_blob=_sha(BIG), content_size=len(BIG),
             metadata={"k": None}),
        dict(base, index=5, role="user", content=marker, content_blob=_sha(marker), content_size=len(marker),
             metadata={"images": [{"sha": image, "type": "image/png", "size": 1536}]}),
    ]
    assert len(UNICODE.encode()) != len(UNICODE)
    assert blob_get(_sha(BIG)).decode() == BIG
    # The ORM's Python types, not only equal values.
    t = Turn.objects.get(pk=ids[2])
    assert type(t.output_tokens) is int and type(t.latency) is float and t.metadata["a"] is None


def test_tool_calls_come_back_out_of_the_view_as_written(ingested) -> None:
    from deeprepo_web.runs.models import ToolCall, Turn

    rollout = ingested["doc-rich"]
    turn_ids = dict(Turn.objects.filter(rollout=rollout).values_list("index", "id"))
    calls = list(ToolCall.objects.filter(rollout=rollout).order_by("id").values(*CALL_FIELDS))
    ids = [c["id"] for c in calls]
    assert len(set(ids)) == len(calls) == 8
    run, noop, fail, batch, query, deep, broken, zeroes = ids  # nested calls follow their parent
    t2 = dict(CALL, turn_id=turn_ids[2], rollout_id=rollout.id)
    t3 = dict(CALL, turn_id=turn_ids[3], rollout_id=rollout.id)
    big_error = UNICODE * 10
    assert calls == [
        dict(t2, id=run, index=0, name="run", call_id="call-1", arguments={"cmd": "ls", "cwd": None},
             output="a.py\nb.py", output_size=9, duration=1.5, cost=0.0001, model="tool-model", input_tokens=5,
             output_tokens=6),
        dict(t2, id=noop, index=1, name="noop"),
        dict(t2, id=fail, index=2, name="fail", arguments={"x": [None]}, output=big_error,
             output_blob=_sha(big_error), output_size=len(big_error.encode()), is_error=True),
        dict(t2, id=batch, index=3, name="batch", arguments=[], output=BIG[:16 * 1024], output_blob=_sha(BIG),
             output_size=len(BIG)),
        dict(t2, id=query, parent_id=batch, index=0, name="llm_query", arguments={"prompt": "p"}, output="o",
             output_size=1, model="sub", input_tokens=1, output_tokens=2, cost=0.5),
        dict(t2, id=deep, parent_id=query, index=0, name="deep", arguments="a string argument"),
        dict(t2, id=broken, parent_id=batch, index=1, name="llm_query", is_error=True,
             output="Traceback\nValueError: x", output_size=len("Traceback\nValueError: x")),
        dict(t3, id=zeroes, index=0, name="zeroes", arguments={}, duration=0.0, cost=0.0, input_tokens=0),
    ]


def test_relations_and_the_turn_index_column(ingested) -> None:
    from deeprepo_web.runs.models import ToolCall, Turn

    rollout = ingested["doc-rich"]
    turn = Turn.objects.get(rollout=rollout, index=2)
    assert [c.name for c in turn.tool_calls.order_by("id")] == ["run", "noop", "fail", "batch", "llm_query", "deep",
                                                                "llm_query"]
    batch = ToolCall.objects.get(rollout=rollout, name="batch")
    assert [(c.name, c.index, c.is_error) for c in batch.sub_calls.order_by("index")] == [
        ("llm_query", 0, False), ("llm_query", 1, True)]
    assert ToolCall.objects.get(rollout=rollout, name="deep").parent.parent_id == batch.id
    assert rollout.turns.count() == 6 and rollout.tool_calls.count() == 8
    with connection.cursor() as cur:
        cur.execute("SELECT c.name, c.turn_index, t.index FROM runs_toolcall c JOIN runs_turn t ON t.id = c.turn_id "
                    "WHERE c.rollout_id = %s ORDER BY c.id", [rollout.id])
        rows = cur.fetchall()
    assert [r[1] for r in rows] == [2, 2, 2, 2, 2, 2, 2, 3]
    assert all(r[1] == r[2] for r in rows)


def test_rollouts_without_turns_have_no_rows(ingested) -> None:
    from deeprepo_web.runs.models import RolloutTurns, ToolCall, Turn

    for uid in ("doc-empty", "doc-none"):
        rollout = ingested[uid]
        assert not Turn.objects.filter(rollout=rollout).exists()
        assert not ToolCall.objects.filter(rollout=rollout).exists()
        # No document (the fold) or an empty one (the ingest): no row either way.
        assert RolloutTurns.objects.filter(rollout_id=rollout.id).values_list("doc", flat=True).first() in (None, [])
    assert Turn.objects.filter(rollout__run=ingested["doc-rich"].run).count() == 8  # 6 rich, 1 before, 1 nan


def _defaults_left_out(entry: dict, inner: str) -> None:
    """No key of the compact format holds its column's default (None, '', False, {}), except inside
    the user's own JSON (`inner`: metadata or arguments)."""
    for key, value in entry.items():
        if key == inner:
            continue
        assert value is not None and value != "" and value is not False and value != {}, (key, value, entry)


def test_the_document_leaves_out_default_values(ingested) -> None:
    from deeprepo_web.runs.models import ToolCall, Turn

    rollout = ingested["doc-rich"]
    doc = _doc(rollout.id)
    ids = list(Turn.objects.filter(rollout=rollout).order_by("index").values_list("id", flat=True))
    assert doc[0] == {"id": ids[0], "i": 0, "r": "user", "c": "only a role and content"}
    assert doc[1] == {"id": ids[1], "i": 1, "r": "system"}
    assert set(doc[2]) == {"id", "i", "r", "c", "cb", "rs", "it", "ot", "l", "m", "md", "k"}  # size = len(c): no cs
    assert set(doc[4]) == {"id", "i", "r", "c", "cb", "cs", "md"} and doc[4]["cs"] == len(BIG)
    calls = {c.id: c for c in ToolCall.objects.filter(rollout=rollout)}
    run, noop, fail, batch, query, deep, broken = doc[2]["k"]  # nested calls after their parent
    assert noop == {"id": noop["id"], "i": 1, "n": "noop"}
    assert deep == {"id": deep["id"], "p": query["id"], "i": 0, "n": "deep", "a": "a string argument"}
    assert set(fail) == {"id", "i", "n", "a", "o", "ob", "os", "e"} and fail["e"] is True
    assert set(run) == {"id", "i", "ci", "n", "a", "o", "d", "m", "it", "ot", "co"}
    assert run["a"] == {"cmd": "ls", "cwd": None}  # a null inside the arguments is kept
    assert doc[3]["k"] == [{"id": doc[3]["k"][0]["id"], "i": 0, "n": "zeroes", "a": {}, "d": 0.0, "co": 0.0, "it": 0}]
    assert [c["id"] for c in doc[2]["k"]] == sorted(calls)[:7]
    for turn in doc:
        _defaults_left_out({k: v for k, v in turn.items() if k != "k"}, "md")
        for call in turn.get("k", []):
            _defaults_left_out(call, "a")


def test_nan_and_infinity_read_as_none_and_leave_no_key(ingested) -> None:
    """NaN and Infinity are stored as nothing, like a missing value: read back as None, and (the
    compact format) no `"l": null` in the document."""
    from deeprepo_web.runs.models import ToolCall, Turn

    rollout = ingested["doc-nan"]
    assert list(Turn.objects.filter(rollout=rollout).values_list("latency", "content")) == [(None, "c")]
    assert list(ToolCall.objects.filter(rollout=rollout).values_list("name", "duration", "cost")) == [("inf", None, None)]
    doc = _doc(rollout.id)
    assert set(doc[0]) == {"id", "i", "r", "c", "k"}, doc
    assert set(doc[0]["k"][0]) == {"id", "i", "n"}, doc


def test_a_batch_sent_again_adds_only_its_new_rollouts(ingested) -> None:
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.models import ToolCall, Turn

    rich = ingested["doc-rich"]
    before = list(Turn.objects.filter(rollout__run=rich.run).order_by("id").values_list("id", "rollout_id", "content"))
    doc = _doc(rich.id)
    again = rollouts_ingest(run=rich.run, rollouts=[
        _record(), {"example_key": "ex-doc", "uid": "doc-later", "turns": [
            {"role": "user", "content": "later", "tool_calls": [{"name": "t", "arguments": {"n": None}}]}]}])
    assert again == 1
    assert _doc(rich.id) == doc
    after = list(Turn.objects.filter(rollout__run=rich.run).order_by("id").values_list("id", "rollout_id", "content"))
    assert after[:-1] == before and after[-1][2] == "later" and after[-1][0] > before[-1][0]
    call = ToolCall.objects.get(rollout__uid="doc-later")
    assert call.arguments == {"n": None} and call.turn_id == after[-1][0] and call.parent_id is None
    assert call.id > max(ToolCall.objects.filter(rollout=rich).values_list("id", flat=True))


def test_the_trajectory_pages_read_of_the_document_equals_the_views(ingested) -> None:
    """turns_after (the trajectory page) reads the document in Python instead of through the views: every
    field of every turn and call of a page comes out as the views give it, the page's bounds and order too."""
    from deeprepo_web.runs.models import ToolCall, Turn
    from deeprepo_web.runs.turns import turns_after

    for uid in ("doc-rich", "doc-nan", "doc-empty"):
        rollout = ingested[uid]
        for start, limit in ((0, 50), (1, 2), (4, 10), (9, 5)):
            turns, calls, more = turns_after(rollout=rollout, start=start, limit=limit)
            views = list(Turn.objects.filter(rollout=rollout, index__gte=start).order_by("index"))
            assert more == (len(views) > limit)
            views = views[:limit]
            view_calls = list(ToolCall.objects.filter(rollout=rollout, turn_id__in=[t.pk for t in views])
                              .order_by("turn_id", "index", "id"))
            fields = [f.attname for f in Turn._meta.concrete_fields]
            assert [[getattr(t, f) for f in fields] for t in turns] == [[getattr(t, f) for f in fields] for t in views]
            fields = [f.attname for f in ToolCall._meta.concrete_fields]
            got = [[getattr(c, f) for f in fields] for c in calls]
            assert got == [[getattr(c, f) for f in fields] for c in view_calls]
    assert len(turns_after(rollout=ingested["doc-rich"], start=0, limit=50)[1]) == 8


def _toasted(cur) -> int:
    """The turns documents held out of line: the values in runs_rolloutturns's TOAST table."""
    cur.execute("SELECT reltoastrelid::regclass::text FROM pg_class WHERE relname = 'runs_rolloutturns'")
    cur.execute(f"SELECT count(DISTINCT chunk_id) FROM {cur.fetchone()[0]}")
    return cur.fetchone()[0]


def _server_has_lz4(cur) -> bool:
    """Debian's Postgres has lz4; some embedded builds (make run's) do not."""
    from django.db import DatabaseError, transaction

    try:
        with transaction.atomic():
            cur.execute("SET LOCAL default_toast_compression = 'lz4'")
    except DatabaseError:
        return False
    return True


def test_a_document_that_compresses_small_stays_in_its_row(team) -> None:
    """runs 0021: a rollout's document compressed to under ~2 kB stays in its own row (one page read for its
    turns, no TOAST chunks to delete with it); one still bigger goes out of line, and reads back whole."""
    import secrets

    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.models import Turn
    from deeprepo_web.runs.services import run_create

    run, _ = run_create(project=team.project, name="doc-storage")
    words = [f"step {i}: the tool read config.yaml and found {i * 7} entries under the key `timeout`" for i in range(60)]
    noise = [secrets.token_hex(3_000) for _ in range(2)]  # 12 kB that compress to no less than half
    with connection.cursor() as cur:
        before = _toasted(cur)
        rollouts_ingest(run=run, rollouts=[
            {"example_key": "ex", "uid": "plain", "turns": [{"role": "tool", "content": w} for w in words]},
            {"example_key": "ex", "uid": "noise", "turns": [{"role": "tool", "content": n} for n in noise]}])
        assert _toasted(cur) == before + 1  # the noise alone
        cur.execute("SELECT r.uid, pg_column_compression(d.doc), pg_column_size(d.doc), octet_length(d.doc::text) "
                    "FROM runs_rolloutturns d JOIN runs_rollout r ON r.id = d.rollout_id WHERE r.run_id = %s "
                    "ORDER BY r.uid", [run.pk])
        (_, _, noise_size, _), (_, method, stored, raw) = cur.fetchall()
        lz4 = _server_has_lz4(cur)
    # Compressed where it is, with lz4 where the server has it (runs 0020; 0023's change of type keeps it).
    assert method == ("lz4" if lz4 else "pglz") and stored < raw / 3
    assert noise_size > 4_000
    assert list(Turn.objects.filter(rollout__uid="plain").order_by("index").values_list("content", flat=True)) == words
    assert list(Turn.objects.filter(rollout__uid="noise").order_by("index").values_list("content", flat=True)) == noise


def test_an_integer_past_64_bits_reads_back_exact(team) -> None:
    """The document is text that `dumps` wrote; an integer orjson cannot hold (it wrote it with json) comes back
    as that integer, not a float, on the trajectory page's read and after retention cleared the bodies."""
    from datetime import timedelta

    from django.utils import timezone

    from deeprepo_web.retention.services import policy_set, retention_sweep
    from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
    from deeprepo_web.runs.models import Rollout
    from deeprepo_web.runs.services import run_create
    from deeprepo_web.runs.turns import turns_after

    run, _ = run_create(project=team.project, name="big-ints")
    rollouts_ingest(run=run, rollouts=[{"example_key": "ex", "uid": "big", "turns": [
        {"role": "assistant", "content": "c", "metadata": {"n": 2**70},
         "tool_calls": [{"name": "seeded", "arguments": {"seed": 2**70 + 1}, "output": "o"}]}]}])
    rollout = Rollout.objects.get(run=run, uid="big")
    turns, calls, _ = turns_after(rollout=rollout, start=0, limit=10)
    assert turns[0].metadata == {"n": 2**70} and calls[0].arguments == {"seed": 2**70 + 1}
    policy_set(project=team.project, keep_days=1)
    assert retention_sweep(now=timezone.now() + timedelta(days=2)).bodies == 1
    turns, calls, _ = turns_after(rollout=rollout, start=0, limit=10)
    assert (turns[0].content, calls[0].output, calls[0].arguments) == ("", "", None)  # bodies cleared
    assert turns[0].metadata == {"n": 2**70}  # the rest of the document rewritten as it was
