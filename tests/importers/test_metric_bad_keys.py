"""An imported metrics file with one key over the limit keeps the rest and names the key (issue 25, item 7)."""

from __future__ import annotations

import json

from deeprepo_web.runs.models import MetricSeries

LONG = "val-core/" + "x" * 600


def test_a_long_key_is_reported_and_the_rest_imported(do_import, tmp_path):
    f = tmp_path / "grpo" / "exp.jsonl"  # verl's file tracker
    f.parent.mkdir()
    f.write_text("".join(json.dumps({"step": s, "data": {"critic/score/mean": s / 10, **({LONG: 1.0} if s == 1 else {})}})
                         + "\n" for s in range(3)))
    report = do_import(f)
    assert MetricSeries.objects.get(key="critic/score/mean").count == 3
    [problem] = report.problems
    assert "609 characters" in problem["message"] and "other keys were stored" in problem["message"]
