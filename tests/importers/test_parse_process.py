"""Big inputs are parsed in a child process: the import stores exactly what the in-process path stores."""

from __future__ import annotations

import json

from deeprepo_web.runs.models import Rollout, ToolCall

from .conftest import counts, vf_row, write_vf


def test_an_import_parsed_in_a_child_process(tmp_path, do_import, settings):
    rows = [vf_row(i, i // 2) for i in range(1200)]  # three batches
    rows[700]["metrics"]["num_turns"] = 1e30  # does not fit an int column: this rollout alone is refused
    lines = [json.dumps(r) for r in rows]
    lines.insert(5, '{"example_id": 9, "completion": [')  # malformed in the middle
    folder = write_vf(tmp_path / "run", lines)
    settings.DEEPREPO_IMPORT_PARSE_PROCESS_BYTES = 0  # every input goes through the child

    report = do_import(folder)
    assert [p["line"] for p in report.problems][0] == 6
    refused = [p["message"] for p in report.problems[1:]]
    assert len(refused) == 1 and "rollout of example '350' (sample 0)" in refused[0], refused
    assert counts() == {"runs": 1, "rollouts": 1199, "turns": 2398, "tool_calls": 1199, "points": 0, "series": 0}
    assert report.runs[0].rollouts == 1199 and report.runs[0].rollouts_received == 1200
    call = ToolCall.objects.get(rollout__sample_index=1, rollout__example__key="3")
    assert call.name == "search" and call.arguments == {"q": "x7"} and call.output == "result 7"

    again = do_import(folder)
    assert again.runs[0].rollouts == 0 and Rollout.objects.count() == 1199
