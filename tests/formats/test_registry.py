"""Formats as plugins: a format registered from outside the formats package (with `register`, or as
a real `deeprepo.formats` entry point of an installed distribution) is detected, parsed, listed
to people and imported by the server, with no change to deeprepo_client.formats."""

from __future__ import annotations

import io
import json
import os
import sys
import textwrap
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from django.core.management import call_command

from deeprepo_client.formats import FORMATS, Format, Sniff, detect, format_choices, parse, register, registry
from deeprepo_client.records import Event, MetricsEvent, Problem, RunEvent
from deeprepo_web.runs.models import MetricSeries, Run

TALLY_MAGIC = b"TALLY v1\n"


def parse_tally(path: Path, *, partial_ok: bool = False, **_options: Any) -> Iterator[Event]:
    """A toy format: 'TALLY v1' then one `step reward` pair a line."""
    yield RunEvent("tally", {"name": path.stem, "kind": "train", "source": "tally"})
    points = []
    for n, line in enumerate(path.read_text().splitlines()[1:], start=2):
        try:
            step, reward = line.split()
            points.append({"step": int(step), "values": {"reward/mean": float(reward)}})
        except ValueError:
            yield Problem(str(path), n, f"not 'step reward': {line!r}")
    yield MetricsEvent("tally", points)


TALLY = Format("tally", "Tally counter files (TALLY v1)", parse_tally,
               (Sniff(5, head=lambda path, head: head.startswith(TALLY_MAGIC)),))


@pytest.fixture
def tally(tmp_path: Path) -> Iterator[Path]:
    register(TALLY)
    f = tmp_path / "counts.txt"
    f.write_bytes(TALLY_MAGIC + b"1 0.25\n2 0.5\nthree 0.75\n4 1.0\n")
    yield f
    registry.unregister("tally")


PLUGIN = '''
from deeprepo_client.formats import Format, Sniff
from deeprepo_client.records import MetricsEvent, RunEvent
import json


def _parse(path, *, partial_ok=False, limits=None, **_):
    rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
    yield RunEvent("ticks", {"name": "ticks-" + path.stem, "kind": "train", "source": "ticks"})
    yield MetricsEvent("ticks", [{"step": r["step"], "values": {"score": r["score"]}} for r in rows])


FORMAT = Format("ticks", "Ticks score lines", _parse,
                (Sniff({priority}, keys=lambda k1, k2: {"tick", "score"} <= k1),))
BROKEN = {"not": "a Format"}
'''


def _install_plugin(root: Path, priority: int, entry: str = "ticks_plugin:FORMAT") -> None:
    """A real installed distribution on sys.path: a module and a dist-info naming its entry point."""
    root.mkdir(parents=True, exist_ok=True)
    (root / "ticks_plugin.py").write_text(PLUGIN.replace("{priority}", str(priority)))
    info = root / "ticks_plugin-0.1.dist-info"
    info.mkdir(exist_ok=True)
    (info / "METADATA").write_text("Metadata-Version: 2.1\nName: ticks-plugin\nVersion: 0.1\n")
    (info / "entry_points.txt").write_text(textwrap.dedent(f"""\
        [deeprepo.formats]
        {entry.split(':')[1].lower()} = {entry}
        """))


@pytest.fixture
def plugin_dir(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[Path]:
    root = tmp_path / "site"
    monkeypatch.syspath_prepend(str(root))
    # the server parses big inputs in a child process: it must find the plugin too
    monkeypatch.setenv("PYTHONPATH", os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")]))
    yield root


    sys.modules.pop("ticks_plugin", None)
    registry.unregister("ticks")
    monkeypatch.undo()
    registry.reload_plugins()


def _ticks_file(tmp_path: Path) -> Path:
    # also art's history line (recorded_at + step): which format wins is the priorities' call
    f = tmp_path / "ticks.jsonl"
    f.write_text("".join(json.dumps({"tick": i, "score": i / 4, "step": i, "recorded_at": "2026-01-01"}) + "\n"
                         for i in range(1, 4)))
    return f


def test_a_registered_format_is_detected_parsed_and_listed(tally: Path) -> None:
    d = detect(tally)
    assert d is not None and d.format == "tally"
    events = list(parse(tally))
    assert isinstance(events[0], RunEvent) and events[0].run["name"] == "counts"
    metrics = [e for e in events if isinstance(e, MetricsEvent)]
    assert [p["step"] for p in metrics[0].points] == [1, 2, 4]
    problems = [e for e in events if isinstance(e, Problem)]
    assert len(problems) == 1 and problems[0].line == 4 and "three 0.75" in problems[0].message
    assert "tally" in FORMATS and "tally" in format_choices()
    assert list(parse(tally, fmt="tally"))[0] == events[0]


def test_the_unknown_format_message_names_the_registered_formats(tally: Path, tmp_path: Path) -> None:
    f = tmp_path / "mystery.txt"
    f.write_text("hello\n")
    [problem] = list(parse(f))
    assert isinstance(problem, Problem) and problem.fatal
    assert "unknown format: text starting 'hello\\n'" in problem.message
    assert "Tally counter files (TALLY v1)" in problem.message
    assert "verl {step}.jsonl dumps" in problem.message and "a Prime hosted export" in problem.message
    registry.unregister("tally")
    [problem] = list(parse(f))
    assert "Tally" not in problem.message


def test_an_entry_point_plugin_is_loaded_and_its_priority_orders_detection(plugin_dir: Path, tmp_path: Path) -> None:
    f = _ticks_file(tmp_path)
    assert detect(f).format == "art"  # type: ignore[union-attr]
    _install_plugin(plugin_dir, priority=90)  # before every built-in keys test (verl is 100)
    registry.reload_plugins()
    assert detect(f).format == "ticks"  # type: ignore[union-attr]
    events = list(parse(f))
    assert [p["values"]["score"] for p in events[1].points] == [0.25, 0.5, 0.75]  # type: ignore[union-attr]
    assert "Ticks score lines" in registry.expected()

    registry.unregister("ticks")
    _install_plugin(plugin_dir, priority=300)  # after every built-in keys test: art's line wins


    sys.modules.pop("ticks_plugin", None)
    registry.reload_plugins()
    assert registry.get("ticks") is not None
    assert detect(f).format == "art"  # type: ignore[union-attr]
    f.write_text(json.dumps({"tick": 1, "score": 0.5}) + "\n")  # no other format's keys
    assert detect(f).format == "ticks"  # type: ignore[union-attr]


def test_a_broken_plugin_is_reported_and_the_other_formats_still_work(plugin_dir: Path, tmp_path: Path,
                                                                      caplog: pytest.LogCaptureFixture) -> None:
    _install_plugin(plugin_dir, priority=90, entry="ticks_plugin:BROKEN")
    registry.reload_plugins()
    assert any("'broken'" in e and "takes a Format" in e for e in registry.plugin_errors)
    assert "format plugin 'broken'" in caplog.text
    assert registry.get("ticks") is None
    assert detect(_ticks_file(tmp_path)).format == "art"  # type: ignore[union-attr]


def test_the_server_imports_a_plugin_format(plugin_dir: Path, tmp_path: Path, team: Any, settings: Any) -> None:
    _install_plugin(plugin_dir, priority=90)
    registry.reload_plugins()
    f = _ticks_file(tmp_path)
    out = io.StringIO()
    call_command("import", str(f), "--project", team.project.slug, stdout=out, stderr=io.StringIO())
    run = Run.objects.get(project=team.project, source="ticks")
    assert run.name == "ticks-ticks"
    assert list(MetricSeries.objects.get(run=run, key="score").metric_set.order_by("step")
                .values_list("value", flat=True)) == [0.25, 0.5, 0.75]

    # a big input parses in a child process: the entry point reaches it there too
    settings.DEEPREPO_IMPORT_PARSE_PROCESS_BYTES = 0
    g = tmp_path / "more" / "ticks2.jsonl"
    g.parent.mkdir()
    g.write_text(json.dumps({"tick": 9, "score": 0.9, "step": 9}) + "\n")
    call_command("import", str(g), "--project", team.project.slug, "--format", "ticks",
                 stdout=io.StringIO(), stderr=io.StringIO())
    run2 = Run.objects.get(project=team.project, name="ticks-ticks2")
    assert MetricSeries.objects.get(run=run2, key="score").metric_set.get().value == pytest.approx(0.9)


def test_the_upload_page_lists_registered_formats(tally: Path, client: Any, team: Any) -> None:
    client.force_login(team.editor)
    html = client.get(f"/p/{team.project.slug}/import/").content.decode()
    assert "Tally counter files (TALLY v1)" in html and "verl {step}.jsonl dumps" in html
    assert '<option value="tally">tally: Tally counter files (TALLY v1)</option>' in html
