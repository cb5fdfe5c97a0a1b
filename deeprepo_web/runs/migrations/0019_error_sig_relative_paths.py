"""Error signatures again where they hold a path: a relative path (`tmp/x`, `src/app.py`) became
`tmp<path>`, `src<path>`, so the same error at two relative paths grouped apart. The signature now
replaces a path from its first segment; stored rollouts whose signatures hold `<path>` (the only ones
the change can touch) are filled again with it, as runs 0014 filled them."""

from importlib import import_module

from django.db import migrations

_0014 = import_module("deeprepo_web.runs.migrations.0014_rollout_error_sig")


def fill_again(apps, schema_editor):
    _0014.fill(apps, schema_editor, only="AND (tool_errors::text LIKE '%%<path>%%' OR error_sig LIKE '%%<path>%%')")


class Migration(migrations.Migration):
    atomic = False  # each window commits on its own, as in 0014

    dependencies = [("runs", "0018_rollout_turns_tokens_order")]

    operations = [migrations.RunPython(fill_again, migrations.RunPython.noop)]
