"""Error signatures kept on the rollout row: each failed call's entry in `tool_errors` gains a fourth
element, the signature of its line, and the final error's goes into the new column `error_sig`, as
`runs.ingest.rollouts` now writes them (`analysis.behaviour.error_signature`). The errors page then
groups stored values instead of normalising every error of the run in SQL on each view.

Filled in Python, with the function ingest uses (one definition of a signature), in windows of rollout
ids, each its own statement; only rollouts with an error are read and written. A window filled again
computes the same values from the same line: a stopped migration, run again, fills everything again.
"""

import json

from django.db import migrations, models

from deeprepo_web.analysis.behaviour import error_signature

WINDOW = 50_000


def fill(apps, schema_editor, only: str = ""):
    """`only`: a further condition on the rollouts to fill (runs 0019 fills again those a change of the
    signature can touch)."""
    with schema_editor.connection.cursor() as cur:
        cur.execute("SELECT coalesce(max(id), 0) FROM runs_rollout")
        last = cur.fetchone()[0]
        for start in range(0, last, WINDOW):
            cur.execute("SELECT id, tool_errors, error FROM runs_rollout WHERE id > %s AND id <= %s "
                        f"AND (tool_errors <> '[]' OR error <> '') {only}", [start, start + WINDOW])
            ids, errors, sigs = [], [], []
            for rid, tool_errors, error in cur.fetchall():
                if isinstance(tool_errors, str):
                    tool_errors = json.loads(tool_errors)
                ids.append(rid)
                errors.append(json.dumps([[e[0], e[1], e[2], error_signature(e[2])] for e in tool_errors]))
                sigs.append(error_signature(error))
            if ids:
                cur.execute("UPDATE runs_rollout r SET tool_errors = v.te::jsonb, error_sig = v.es "
                            "FROM unnest(%s::bigint[], %s::text[], %s::text[]) v(id, te, es) WHERE r.id = v.id",
                            [ids, errors, sigs])


class Migration(migrations.Migration):
    # Each window commits on its own (atomic = False): a stop midway keeps what was filled.
    atomic = False

    dependencies = [("runs", "0013_rollout_tools_tool_errors")]

    operations = [
        migrations.RunSQL(
            "ALTER TABLE runs_rollout ADD COLUMN error_sig text NOT NULL DEFAULT ''",
            "ALTER TABLE runs_rollout DROP COLUMN error_sig",
            state_operations=[migrations.AddField("rollout", "error_sig", models.TextField(blank=True, default=""))],
        ),
        migrations.RunPython(fill, migrations.RunPython.noop),
    ]
