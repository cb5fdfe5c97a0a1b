"""A rollout's turns and tool calls become one JSON document per rollout (runs_rolloutturns), and
runs_turn and runs_toolcall become views over it (docs/scale.md, "Turns as one document").

The stored rows are folded in windows of rollout ids, each committed on its own (a stop midway keeps
what was folded; run again, the migration skips the rollouts that have their document). The last
window, the drop of the two tables and the views go in one transaction that first locks the tables
against writes, so a rollout logged meanwhile by a server still on the release before is folded too.
The ids of turns and calls go on from where their tables' sequences were. To go back, restore a
backup: the reverse operation is there for tests that migrate backwards (it copies the views into
tables again).

The document's keys are runs/turndoc.py's; the views read them back, a missing key as the column's
default.
"""

from django.db import NotSupportedError, migrations, models, transaction

import deeprepo_web.runs.models

WINDOW = 50_000

# json, not jsonb: Postgres checks the text and keeps it as it is, where jsonb would parse it into its
# binary form, twice the server's CPU for an 8 kB rollout at ingest (docs/scale.md); the views parse
# one rollout's document when it is read. The smallest tuple target: every document past 128 B is
# compressed (a turn of 150 B was never) and stored out of line, packed four chunks to a page.
CREATE = """
CREATE TABLE runs_rolloutturns (rollout_id bigint PRIMARY KEY, doc json NOT NULL);
ALTER TABLE runs_rolloutturns SET (toast_tuple_target = 128);
"""
# lz4 compresses in a fifth of pglz's time (ingest compresses every document), where the server has
# it: Debian's and the official images' Postgres do, some embedded builds (make run's) do not.
LZ4 = "ALTER TABLE runs_rolloutturns ALTER COLUMN doc SET COMPRESSION lz4"

_CALL = """jsonb_strip_nulls(jsonb_build_object(
    'id', c.id, 'p', c.parent_id, 'i', c.index, 'ci', nullif(c.call_id, ''), 'n', c.name,
    'o', nullif(c.output, ''), 'ob', nullif(c.output_blob, ''),
    'os', CASE WHEN c.output_size <> length(c.output) THEN c.output_size END,
    'e', CASE WHEN c.is_error THEN true END, 'd', c.duration, 'm', nullif(c.model, ''),
    'it', c.input_tokens, 'ot', c.output_tokens, 'co', c.cost))
  || CASE WHEN c.arguments IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('a', c.arguments) END"""

_TURN = """jsonb_strip_nulls(jsonb_build_object(
    'id', t.id, 'i', t.index, 'r', t.role, 'c', nullif(t.content, ''), 'cb', nullif(t.content_blob, ''),
    'cs', CASE WHEN t.content_size <> length(t.content) THEN t.content_size END,
    'rs', nullif(t.reasoning, ''), 'it', t.input_tokens, 'ot', t.output_tokens, 'l', t.latency,
    'm', nullif(t.model, '')))
  || CASE WHEN t.metadata = '{}'::jsonb THEN '{}'::jsonb ELSE jsonb_build_object('md', t.metadata) END
  || CASE WHEN k.calls IS NULL THEN '{}'::jsonb ELSE jsonb_build_object('k', k.calls) END"""

# Arguments and metadata are added whole, after jsonb_strip_nulls: a null inside them is the user's.
FOLD = f"""
WITH k AS (
  SELECT c.turn_id, jsonb_agg({_CALL} ORDER BY c.id) AS calls
  FROM runs_toolcall c WHERE c.rollout_id >= %(lo)s AND c.rollout_id < %(hi)s GROUP BY c.turn_id
)
INSERT INTO runs_rolloutturns (rollout_id, doc)
SELECT t.rollout_id, jsonb_agg({_TURN} ORDER BY t.index)::json
FROM runs_turn t LEFT JOIN k ON k.turn_id = t.id
WHERE t.rollout_id >= %(lo)s AND t.rollout_id < %(hi)s
GROUP BY t.rollout_id
ON CONFLICT (rollout_id) DO NOTHING
"""

VIEWS = """
CREATE VIEW runs_turn AS
SELECT (t->>'id')::bigint AS id, d.rollout_id, (t->>'i')::int AS index, t->>'r' AS role,
       coalesce(t->>'c', '') AS content, coalesce(t->>'cb', '') AS content_blob,
       coalesce((t->>'cs')::bigint, length(t->>'c'), 0) AS content_size, coalesce(t->>'rs', '') AS reasoning,
       (t->>'it')::bigint AS input_tokens, (t->>'ot')::bigint AS output_tokens, (t->>'l')::float8 AS latency,
       coalesce(t->>'m', '') AS model, coalesce(t->'md', '{}'::jsonb) AS metadata
FROM runs_rolloutturns d CROSS JOIN LATERAL jsonb_array_elements(d.doc::jsonb) AS t;

-- turn_index: the call's turn's index, which search and the indexer need with the call.
CREATE VIEW runs_toolcall AS
SELECT (c->>'id')::bigint AS id, (t->>'id')::bigint AS turn_id, d.rollout_id, (c->>'p')::bigint AS parent_id,
       (c->>'i')::int AS index, coalesce(c->>'ci', '') AS call_id, c->>'n' AS name, c->'a' AS arguments,
       coalesce(c->>'o', '') AS output, coalesce(c->>'ob', '') AS output_blob,
       coalesce((c->>'os')::bigint, length(c->>'o'), 0) AS output_size,
       coalesce((c->>'e')::boolean, false) AS is_error, (c->>'d')::float8 AS duration,
       coalesce(c->>'m', '') AS model, (c->>'it')::bigint AS input_tokens, (c->>'ot')::bigint AS output_tokens,
       (c->>'co')::float8 AS cost, (t->>'i')::int AS turn_index
FROM runs_rolloutturns d CROSS JOIN LATERAL jsonb_array_elements(d.doc::jsonb) AS t
     CROSS JOIN LATERAL jsonb_array_elements(t->'k') AS c;
"""


def _next_id(cur, table: str) -> int:
    cur.execute(f"SELECT coalesce(max(id), 0) FROM {table}")
    top = cur.fetchone()[0]
    cur.execute(f"SELECT last_value, is_called FROM {table}_id_seq")
    last, called = cur.fetchone()
    return max(top, last if called else last - 1) + 1


def fold(apps, schema_editor):
    connection = schema_editor.connection
    with connection.cursor() as cur:
        cur.execute("SELECT to_regclass('runs_rolloutturns') IS NULL")
        if cur.fetchone()[0]:
            cur.execute(CREATE)
            try:
                with transaction.atomic(using=connection.alias):
                    cur.execute(LZ4)
            except NotSupportedError:
                pass  # pglz, Postgres's default
        cur.execute("SELECT coalesce(max(rollout_id) + 1, 0) FROM runs_turn")
        top = cur.fetchone()[0]
        for lo in range(0, top, WINDOW):
            cur.execute(FOLD, {"lo": lo, "hi": lo + WINDOW})
    with transaction.atomic(using=connection.alias), connection.cursor() as cur:
        cur.execute("LOCK TABLE runs_turn, runs_toolcall IN SHARE MODE")
        cur.execute(FOLD, {"lo": max(top - WINDOW, 0), "hi": 2**62})
        starts = {table: _next_id(cur, table) for table in ("runs_turn", "runs_toolcall")}
        cur.execute("DROP TABLE runs_toolcall, runs_turn")
        for table, start in starts.items():
            cur.execute(f"CREATE SEQUENCE {table}_id_seq START WITH {int(start)}")
        cur.execute(VIEWS)


# Back to the tables of runs 0019 (tests that migrate backwards through it; a release that must go
# back should restore a backup instead): the views' rows copied into tables made as 0019 left them.
TABLES = """
CREATE TABLE runs_turn_t (
    id bigint NOT NULL GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, index integer NOT NULL,
    role varchar(32) NOT NULL, content text NOT NULL, content_blob varchar(64) NOT NULL,
    content_size bigint NOT NULL, reasoning text NOT NULL, input_tokens bigint, output_tokens bigint,
    latency double precision, model varchar(500) NOT NULL, metadata jsonb NOT NULL, rollout_id bigint NOT NULL);
CREATE TABLE runs_toolcall_t (
    id bigint NOT NULL GENERATED BY DEFAULT AS IDENTITY PRIMARY KEY, index integer NOT NULL,
    call_id varchar(200) NOT NULL, name varchar(500) NOT NULL, arguments jsonb, output text NOT NULL,
    output_blob varchar(64) NOT NULL, output_size bigint NOT NULL, is_error boolean NOT NULL,
    duration double precision, model varchar(500) NOT NULL, input_tokens bigint, output_tokens bigint,
    cost double precision, parent_id bigint, rollout_id bigint NOT NULL, turn_id bigint NOT NULL);
INSERT INTO runs_turn_t (id, index, role, content, content_blob, content_size, reasoning, input_tokens,
    output_tokens, latency, model, metadata, rollout_id)
  SELECT id, index, role, content, content_blob, content_size, reasoning, input_tokens, output_tokens, latency,
         model, metadata, rollout_id FROM runs_turn;
INSERT INTO runs_toolcall_t (id, index, call_id, name, arguments, output, output_blob, output_size, is_error,
    duration, model, input_tokens, output_tokens, cost, parent_id, rollout_id, turn_id)
  SELECT id, index, call_id, name, arguments, output, output_blob, output_size, is_error, duration, model,
         input_tokens, output_tokens, cost, parent_id, rollout_id, turn_id FROM runs_toolcall;
DROP VIEW runs_toolcall, runs_turn;
DROP TABLE runs_rolloutturns;
ALTER TABLE runs_turn_t RENAME TO runs_turn;
ALTER TABLE runs_toolcall_t RENAME TO runs_toolcall;
ALTER TABLE runs_turn RENAME CONSTRAINT runs_turn_t_pkey TO runs_turn_pkey;
ALTER TABLE runs_toolcall RENAME CONSTRAINT runs_toolcall_t_pkey TO runs_toolcall_pkey;
ALTER TABLE runs_turn ADD CONSTRAINT turn_rollout_index_unique UNIQUE (rollout_id, index);
CREATE INDEX toolcall_rollout ON runs_toolcall (rollout_id);
"""


def unfold(apps, schema_editor):
    connection = schema_editor.connection
    with transaction.atomic(using=connection.alias), connection.cursor() as cur:
        starts = {table: _next_id(cur, table) for table in ("runs_turn", "runs_toolcall")}
        cur.execute("DROP SEQUENCE runs_turn_id_seq, runs_toolcall_id_seq")
        cur.execute(TABLES)
        for table, start in starts.items():
            cur.execute(f"ALTER SEQUENCE {table}_t_id_seq RENAME TO {table}_id_seq")
            cur.execute(f"SELECT setval('{table}_id_seq', %s, false)", [start])


class Migration(migrations.Migration):
    atomic = False  # each window commits on its own

    dependencies = [("runs", "0019_error_sig_relative_paths")]

    operations = [
        migrations.SeparateDatabaseAndState(
            database_operations=[migrations.RunPython(fold, unfold)],
            state_operations=[
                migrations.CreateModel(
                    name="RolloutTurns",
                    fields=[
                        ("rollout", models.OneToOneField(
                            db_constraint=False, on_delete=models.deletion.CASCADE, primary_key=True,
                            related_name="+", serialize=False, to="runs.rollout")),
                        ("doc", deeprepo_web.runs.models.JsonColumn()),
                    ],
                ),
                migrations.RemoveConstraint(model_name="turn", name="turn_rollout_index_unique"),
                migrations.RemoveIndex(model_name="toolcall", name="toolcall_rollout"),
                migrations.AlterField(
                    model_name="turn", name="rollout",
                    field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=models.deletion.DO_NOTHING,
                                            related_name="turns", to="runs.rollout")),
                migrations.AlterField(
                    model_name="toolcall", name="turn",
                    field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=models.deletion.DO_NOTHING,
                                            related_name="tool_calls", to="runs.turn")),
                migrations.AlterField(
                    model_name="toolcall", name="rollout",
                    field=models.ForeignKey(db_constraint=False, db_index=False, on_delete=models.deletion.DO_NOTHING,
                                            related_name="tool_calls", to="runs.rollout")),
                migrations.AlterField(
                    model_name="toolcall", name="parent",
                    field=models.ForeignKey(blank=True, db_constraint=False, db_index=False, null=True,
                                            on_delete=models.deletion.DO_NOTHING, related_name="sub_calls",
                                            to="runs.toolcall")),
                migrations.AddField(model_name="toolcall", name="turn_index", field=models.IntegerField(default=0),
                                    preserve_default=False),
                migrations.AlterModelOptions(name="turn", options={"managed": False}),
                migrations.AlterModelOptions(name="toolcall", options={"managed": False}),
                migrations.AlterModelTable(name="turn", table="runs_turn"),
                migrations.AlterModelTable(name="toolcall", table="runs_toolcall"),
            ],
        ),
    ]
