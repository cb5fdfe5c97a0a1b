"""A rollout's turns document that compresses to under ~2 kB stays in its own row (docs/scale.md, "The turns
document in its row").

0020 set the table's TOAST tuple target to 128 B, expecting every document past 128 B to be compressed.
Postgres only starts compressing a row past its fixed threshold (~2 kB), whatever the target; what the
target of 128 B did was move every compressed document out of line, where its row keeps a pointer and
its bytes go to the TOAST table as chunks, each indexed. Reading a rollout's turns then reads the TOAST
index and its chunks besides the row, and deleting a run deletes every chunk, found through that index.

With the default target a row past ~2 kB is compressed as before, and goes out of line only when its
compressed row is still past ~2 kB: a short rollout (a math problem and its answer) costs one page read,
a long one is stored as before, in chunks packed four to a page. (STORAGE MAIN, which keeps documents in
the row up to a whole page, was measured too: a document compressed to 5-8 kB then takes a page of its
own, up to +32 % on disk.)

Only documents written from now on are stored so: rewriting the stored ones would rewrite the table (a lock
on it for the length of the rewrite). The ones out of line stay readable as they are.
"""

from django.db import migrations


class Migration(migrations.Migration):
    dependencies = [("runs", "0020_turns_document")]

    operations = [
        migrations.RunSQL("ALTER TABLE runs_rolloutturns RESET (toast_tuple_target)",
                          "ALTER TABLE runs_rolloutturns SET (toast_tuple_target = 128)"),
    ]
