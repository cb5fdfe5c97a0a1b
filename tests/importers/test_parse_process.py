"""Big inputs are parsed in a child process: the import stores exactly what the in-process path stores."""

from __future__ import annotations

import json

from deeprepo_web.runs.models import Rollout, ToolCall

from .conftest import counts, vf_row, write_vf


def test_an_import_parsed_in_a_child_process(tmp_path, do_import, settings):
    rows = [json.dumps(vf_row(i, i // 2)) for i in range(12)]
    rows.insert(5, '{"example_id": 9, "completion": [')  # malformed in the middle
    folder = write_vf(tmp_path / "run", rows)
    settings.DEEPREPO_IMPORT_PARSE_PROCESS_BYTES = 0  # every input goes through the child

    report = do_import(folder)
    assert [p["line"] for p in report.problems] == [6]
    assert counts() == {"runs": 1, "rollouts": 12, "turns": 24, "tool_calls": 12, "points": 0, "series": 0}
    call = ToolCall.objects.get(rollout__sample_index=1, rollout__example__key="3")
    assert call.name == "search" and call.arguments == {"q": "x7"} and call.output == "result 7"
    assert sorted(Rollout.objects.values_list("reward", flat=True))[-1] == 1.1

    again = do_import(folder)
    assert again.runs[0].rollouts == 0 and Rollout.objects.count() == 12
