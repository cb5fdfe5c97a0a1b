"""Big inputs are parsed in a child process and stored from writer threads (on connections of their
own, so these tests commit for real): the import stores exactly what the in-process path stores."""

from __future__ import annotations

import gc
import json
import threading

import pytest

from deeprepo_web.importers import writers
from deeprepo_web.runs.models import Rollout, ToolCall

from .conftest import counts, vf_row, write_vf

pytestmark = pytest.mark.django_db(transaction=True)


def _writer_threads() -> list[str]:
    return [t.name for t in threading.enumerate() if t.name.startswith("deeprepo-import-write")]


def test_an_import_parsed_in_a_child_process(tmp_path, do_import, settings, monkeypatch):
    rows = [vf_row(i, i // 2) for i in range(1200)]  # three batches
    rows[700]["metrics"]["num_turns"] = 1e30  # does not fit an int column: this rollout alone is refused
    lines = [json.dumps(r) for r in rows]
    lines.insert(5, '{"example_id": 9, "completion": [')  # malformed in the middle
    folder = write_vf(tmp_path / "run", lines)
    settings.DEEPREPO_IMPORT_PARSE_PROCESS_BYTES = 0  # every input goes through the child
    settings.DEEPREPO_IMPORT_WRITERS = 2  # and its three batches through two writer threads
    seen: set[str] = set()
    ingest = writers.rollouts_ingest

    def spy(**kw):
        seen.add(threading.current_thread().name)
        return ingest(**kw)

    monkeypatch.setattr(writers, "rollouts_ingest", spy)
    report = do_import(folder)
    assert seen and all(name.startswith("deeprepo-import-write") for name in seen), seen
    assert [p["line"] for p in report.problems][0] == 6
    refused = [p["message"] for p in report.problems[1:]]
    assert len(refused) == 1 and "rollout of example '350' (sample 0)" in refused[0], refused
    assert counts() == {"runs": 1, "rollouts": 1199, "turns": 2398, "tool_calls": 1199, "points": 0, "series": 0}
    assert report.runs[0].rollouts == 1199 and report.runs[0].rollouts_received == 1200
    call = ToolCall.objects.get(rollout__sample_index=1, rollout__example__key="3")
    assert call.name == "search" and call.arguments == {"q": "x7"} and call.output == "result 7"

    again = do_import(folder)
    assert again.runs[0].rollouts == 0 and Rollout.objects.count() == 1199


def test_a_bug_in_a_writer_thread_stops_the_import(tmp_path, do_import, settings, monkeypatch):
    """Not bad input but a bug (here: injected into the second batch): the import raises it, as the
    in-process path does, and no writer thread is left behind."""
    folder = write_vf(tmp_path / "run", [vf_row(i, i // 2) for i in range(1200)])
    settings.DEEPREPO_IMPORT_PARSE_PROCESS_BYTES = 0
    settings.DEEPREPO_IMPORT_WRITERS = 2
    ingest = writers.rollouts_ingest
    calls = []

    def broken(**kw):
        calls.append(1)
        if len(calls) == 2:
            raise RuntimeError("a bug in the row builder")
        return ingest(**kw)

    monkeypatch.setattr(writers, "rollouts_ingest", broken)
    with pytest.raises(RuntimeError, match="a bug in the row builder"):
        do_import(folder)
    assert _writer_threads() == []


def test_a_big_import_leaves_no_cycles_for_the_collector_it_paused(tmp_path, do_import, settings):
    """The cyclic collector is off during a big import: what the import allocates must be freed by
    reference counting alone. Recursive closures (one per rollout) once left ~20 objects each."""
    folder = write_vf(tmp_path / "run", [vf_row(i, i // 2) for i in range(1200)])
    settings.DEEPREPO_IMPORT_PARSE_PROCESS_BYTES = 0
    do_import(write_vf(tmp_path / "warm", [vf_row(0, 0)]))  # one-off caches and imports first
    assert gc.isenabled()  # the import turned it back on
    gc.collect()
    gc.disable()
    try:
        report = do_import(folder)
        found = gc.collect()
    finally:
        gc.enable()
    assert report.runs[0].rollouts == 1200
    assert found < 300, f"{found} objects in reference cycles after importing 1,200 rollouts"
