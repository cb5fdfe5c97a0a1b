"""The two trigger functions by which other apps' tables refer to rollouts without a foreign key
(runs/references.py says why; labels 0003, judge 0004 and sharing 0003 put them to use)."""

from django.db import migrations

from deeprepo_web.runs.references import FUNCTIONS, FUNCTIONS_DROP


class Migration(migrations.Migration):
    dependencies = [("runs", "0021_turns_document_inline")]

    operations = [migrations.RunSQL(FUNCTIONS, FUNCTIONS_DROP)]
