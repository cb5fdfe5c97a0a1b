"""Tool names and tool errors on the rollout row (docs/scale.md, the folded layout's step 2), filled
from the stored tool calls: the distinct names of a rollout's calls (nested ones too), sorted, and per
failed call [tool, its turn's index, the last line of its output] in call order, as
`runs.ingest.rollouts.rollout_facts` writes them for new rollouts (here from the stored output, which
for a body past the blob threshold is its preview: what error signatures grouped until now).

The columns come with a default (no table rewrite); only rollouts with tool calls are updated, in
windows of rollout ids, each its own statement, so a large table does not hold one transaction long.
Then the GIN index of search's tool filter (`tools @> '["name"]'`). At 2·10^6 rollouts on 2 cores the
fill took 70 s and the index 1 s (bench/rollout_facts.py).
"""

from django.contrib.postgres.indexes import GinIndex
from django.contrib.postgres.operations import AddIndexConcurrently
from django.db import migrations, models

WINDOW = 50_000

FILL = """
UPDATE runs_rollout r SET tools = f.tools, tool_errors = f.errors FROM (
  SELECT c.rollout_id,
         jsonb_agg(DISTINCT c.name COLLATE "C" ORDER BY c.name COLLATE "C") AS tools,
         coalesce(jsonb_agg(jsonb_build_array(c.name, ti.index,
             left(coalesce((regexp_match(rtrim(c.output, E' \\n\\r\\t'), '([^\\n]*)$'))[1], ''), 1000))
           ORDER BY c.id) FILTER (WHERE c.is_error), '[]') AS errors
  FROM runs_toolcall c LEFT JOIN runs_turn ti ON ti.id = c.turn_id
  WHERE c.rollout_id > %s AND c.rollout_id <= %s
  GROUP BY c.rollout_id
) f WHERE r.id = f.rollout_id
"""


def fill(apps, schema_editor):
    with schema_editor.connection.cursor() as cur:
        cur.execute("SELECT coalesce(max(id), 0) FROM runs_rollout")
        last = cur.fetchone()[0]
        for start in range(0, last, WINDOW):
            cur.execute(FILL, [start, start + WINDOW])


class Migration(migrations.Migration):
    # Each window commits on its own (atomic = False): a stop midway keeps what was filled, and the
    # migration, run again, fills every window again with the same values.
    atomic = False

    dependencies = [("runs", "0012_run_rollouts_rewritten_at")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE runs_rollout ADD COLUMN tools jsonb NOT NULL DEFAULT '[]', "
            "ADD COLUMN tool_errors jsonb NOT NULL DEFAULT '[]'",
            "ALTER TABLE runs_rollout DROP COLUMN tools, DROP COLUMN tool_errors",
            state_operations=[
                migrations.AddField("rollout", "tools", models.JSONField(blank=True, default=list)),
                migrations.AddField("rollout", "tool_errors", models.JSONField(blank=True, default=list)),
            ],
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
        # After the fill, so that it is built once rather than kept up row by row; concurrently, so that
        # ingest goes on meanwhile.
        AddIndexConcurrently("rollout", GinIndex(fields=["tools"], opclasses=["jsonb_path_ops"], name="rollout_tools")),
    ]
