"""An imported finished eval ran as long as its files say, not from the import until now, and a
re-import later does not end it again (real vf-eval output)."""

from __future__ import annotations

from pathlib import Path

import pytest

from deeprepo_web.runs.models import Run

pytestmark = pytest.mark.django_db


def test_imported_eval_keeps_the_time_its_files_report(do_import, samples: Path) -> None:
    folder = samples / "verifiers_eval" / "math-python--gpt-4.1-mini__578769a7"  # metadata time_ms 34940
    do_import(folder)
    run = Run.objects.get()
    assert run.status == "finished" and run.started_at is None and run.finished_at is None
    assert run.duration_seconds == pytest.approx(34.94, abs=0.01)
    do_import(folder)  # again, later: the same run, still not "ended at the re-import"
    run.refresh_from_db()
    assert Run.objects.count() == 1 and run.finished_at is None
    assert run.duration_seconds == pytest.approx(34.94, abs=0.01)


def test_an_eval_that_did_not_time_itself_has_no_duration(do_import, samples: Path) -> None:
    do_import(samples / "verifiers_eval" / "wordle--qwen3-30b-a3b-thinking-2507__50bdff53")  # time_ms 0.0
    assert Run.objects.get().duration_seconds is None
