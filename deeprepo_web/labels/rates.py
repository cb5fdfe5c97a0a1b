"""Compare's "label rate" rows: per run, the share of its rollouts that carry each label, with the
bootstrap CI of the change against the baseline (compare's own rows and deltas)."""

from __future__ import annotations

from typing import Any

import numpy as np
from django.db import connection

from deeprepo_web.labels.models import Label


def label_rate_rows(data: list[Any], baseline: int, boot: Any) -> list[Any]:
    from deeprepo_web.compare.comparison import Delta, Row, rate_cell

    ids = [i for d in data for i in d.ids]
    if not ids:
        return []
    with connection.cursor() as cur:
        cur.execute("SELECT label_id, rollout_id FROM labels_mark WHERE rollout_id = ANY(%s) AND status <> 'rejected'",
                    [ids])
        marked: dict[int, set[int]] = {}
        for label_id, rollout_id in cur.fetchall():
            marked.setdefault(label_id, set()).add(rollout_id)
    rows = []
    for label in Label.objects.filter(pk__in=marked).order_by("name"):
        on = marked[label.pk]
        arrays = [np.array([1.0 if i in on else 0.0 for i in d.ids], dtype=float) for d in data]
        deltas: list[Any] = [None if i == baseline or not len(a) or not len(arrays[baseline])
                             else Delta(boot.diff(data[baseline], d, arrays[baseline], a), 0)
                             for i, (d, a) in enumerate(zip(data, arrays, strict=True))]
        rows.append(Row(f"label:{label.name}", f"Label rate: {label.name}", [rate_cell(a) for a in arrays],
                        deltas, "{:+.3f}", rel=False))
    return rows
