"""TensorBoard event files (`events.out.tfevents.*`), alone, as a run folder, or a logdir of runs.

As TensorBoard groups them, a run is a folder holding event files (a writer restarted in the same
folder adds a file to the same run) and is named by its path under the logdir. Each record (see
tfrecord.py) is an `Event {wall_time 1, step 2, file_version 3, summary 5}`; a summary value is
`{tag 1, simple_value 2, metadata 9, tensor 8}`. Scalars come in two forms: `simple_value`
(PyTorch and tensorboardX `add_scalar`) or a one-element tensor whose metadata names the `scalars`
plugin (TF2, `new_style`). TF2 writes a tag's metadata only with its first value, so the plugin of
each tag is remembered. Text summaries (plugin `text`, a string tensor): a JSON object (the HF
Trainer's `args`, `model_config`) goes into the run's config, other text into its summary, the
latest under the tag and every step's under `text`. Histograms, images, audio and other plugins are
named in one Problem per run, not imported.

Every run folder's files are read twice over the same bytes: first what the run record needs
(start time, config, text), then the scalars, so the run is announced before its points.
"""

from __future__ import annotations

import json
import os
import struct
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ..records import Event, MetricPoint, Problem, RunEvent, RunRecord
from ._batches import batch_points
from ._protowire import WireError, fields, packed_varints, signed, text
from ._values import num
from .tfrecord import Damage, header_ok, records

NAME_MARK = "tfevents"  # TensorBoard's own test for an event file name
MAX_DEPTH = 6
MAX_FILES = 2000
_TEXT_SUFFIX = "/text_summary"  # tensorboardX and PyTorch add it to text tags
# TensorProto dtypes -> (field of repeated values, struct format of tensor_content)
_DTYPES: dict[int, tuple[int, str]] = {1: (5, "f"), 2: (6, "d"), 3: (7, "i"), 9: (10, "q"), 10: (11, "?"),
                                       19: (13, "e")}
_DT_STRING = 7


def is_event_file(head: bytes) -> bool:
    """The file starts with a whole checksummed record holding an Event's wall time (detection)."""
    return len(head) >= 21 and header_ok(head, 0) and head[12] == 0x09


def _looks_like(path: Path) -> bool:
    if NAME_MARK not in path.name or not path.is_file():
        return False
    try:
        with open(path, "rb") as f:
            return is_event_file(f.read(64))
    except OSError:
        return False


def is_run_dir(path: Path, names: set[str]) -> bool:
    """A folder holding event files itself (detection)."""
    return any(NAME_MARK in n and _looks_like(path / n) for n in names)


def run_dirs(root: Path) -> dict[str, list[Path]]:
    """Run name (path under `root`, "." for root itself) -> its event files in writing order."""
    if root.is_file():
        return {".": [root]}
    runs: dict[str, list[Path]] = {}
    seen = 0
    for folder, subdirs, files in os.walk(root):
        here = Path(folder)
        depth = len(here.relative_to(root).parts)
        subdirs[:] = sorted(d for d in subdirs if not d.startswith(".") and depth < MAX_DEPTH)
        events = sorted(here / f for f in files if NAME_MARK in f)
        seen += len(events)
        if seen > MAX_FILES:
            break
        found = [p for p in events if _looks_like(p)]
        if found:
            runs[here.relative_to(root).as_posix()] = found
    return runs


def _float32(raw: int) -> float:
    return float(struct.unpack("<f", struct.pack("<I", raw))[0])


def _plugin(metadata: bytes) -> str:
    for number, value in fields(metadata):
        if number == 1 and isinstance(value, bytes):  # plugin_data
            for n, v in fields(value):
                if n == 1:
                    return text(v)
    return ""


def _number(raw: Any, fmt: str) -> float:
    """One value of a repeated field read unpacked: a float32 comes as its 32 bits, the rest as varints."""
    if fmt == "f":
        return _float32(raw)
    if fmt == "e":  # half_val holds the 16 bits of a half in an int32
        return float(struct.unpack("<e", struct.pack("<H", raw & 0xFFFF))[0])
    return float(signed(raw) if fmt in "iq" else raw)


def _tensor(buf: bytes) -> tuple[int, list[Any]]:
    """(dtype, values) of a TensorProto: raw tensor_content, or its repeated field (packed or not)."""
    dtype = 0
    content = b""
    repeated: dict[int, list[Any]] = {}
    for number, value in fields(buf):
        if number == 1:
            dtype = value
        elif number == 4:
            content = value
        else:
            repeated.setdefault(number, []).append(value)
    if dtype == _DT_STRING:
        return dtype, [text(v) for v in repeated.get(8, [])]
    field, fmt = _DTYPES.get(dtype, (0, ""))
    if not fmt:
        return dtype, []
    if content:
        size = struct.calcsize(fmt)
        return dtype, [float(v[0]) for v in struct.iter_unpack("<" + fmt, content[:len(content) // size * size])]
    values: list[float] = []
    for raw in repeated.get(field, []):
        if not isinstance(raw, bytes):
            values.append(_number(raw, fmt))
        elif fmt in "fd":  # packed floats and doubles: fixed width
            size = struct.calcsize(fmt)
            values.extend(float(v[0]) for v in struct.iter_unpack("<" + fmt, raw[:len(raw) // size * size]))
        else:  # packed varints
            values.extend(_number(v, fmt) for v in packed_varints(raw))
    return dtype, values


_OTHER = {3: "histogram", 4: "image", 5: "histogram", 6: "audio"}  # Summary.Value fields we do not import


def _value(buf: bytes, plugins: dict[str, str]) -> tuple[str, str, Any]:
    """(tag, kind, payload) of a Summary.Value: kind is scalar (a float), text (a str) or the name
    of what is not imported."""
    tag = ""
    simple: float | None = None
    tensor = b""
    other = ""
    for number, value in fields(buf):
        if number == 1:
            tag = text(value)
        elif number == 2:
            simple = _float32(value) if isinstance(value, int) else None
        elif number == 9 and isinstance(value, bytes):
            plugin = _plugin(value)
            if plugin:
                plugins[tag] = plugin  # field 1 (tag) comes first in every writer's output
        elif number == 8 and isinstance(value, bytes):
            tensor = value
        elif number in _OTHER:
            other = _OTHER[number]
    if simple is not None:
        return tag, "scalar", simple
    plugin = plugins.get(tag, "")
    if tensor and plugin in ("scalars", ""):
        dtype, values = _tensor(tensor)
        if len(values) == 1 and dtype != _DT_STRING:
            return tag, "scalar", values[0]
        if plugin == "" and dtype == _DT_STRING:
            plugin = "text"
    if tensor and plugin == "text":
        strings = _tensor(tensor)[1]
        tag = tag[:-len(_TEXT_SUFFIX)] if tag.endswith(_TEXT_SUFFIX) else tag
        return tag, "text", "\n".join(str(s) for s in strings)
    return tag, "skip", plugin or other or "tensor"


def _event(buf: bytes, plugins: dict[str, str]) -> tuple[float | None, int, list[tuple[str, str, Any]]]:
    """(wall time, step, summary values) of an Event record."""
    wall: float | None = None
    step = 0
    values: list[tuple[str, str, Any]] = []
    for number, value in fields(buf):
        if number == 1 and isinstance(value, float):
            wall = value
        elif number == 2 and isinstance(value, int):
            step = signed(value)
        elif number == 5 and isinstance(value, bytes):
            values.extend(_value(v, plugins) for n, v in fields(value) if n == 1 and isinstance(v, bytes))
    return wall, step, values


class _Run:
    """One run folder: its files' bytes, read once, and what the first pass finds in them."""

    def __init__(self, name: str, files: list[Path], partial_ok: bool) -> None:
        self.name = name
        self.files = files
        self.partial_ok = partial_ok
        self.data: list[tuple[Path, bytes]] = []
        self.problems: list[Problem] = []
        self.config: dict[str, Any] = {}
        self.latest_text: dict[str, str] = {}
        self.texts: dict[str, dict[str, str]] = {}
        self.skipped: dict[str, set[str]] = {}
        self.start: float | None = None
        self.end: float | None = None
        for path in files:
            try:
                self.data.append((path, path.read_bytes()))
            except OSError as exc:
                self.problems.append(Problem(str(path), None, f"cannot read the event file: {exc}"))

    def events(self, survey: bool) -> Iterator[tuple[float | None, int, list[tuple[str, str, Any]]]]:
        """Decoded events. The survey (first pass) reports damage, takes every record's wall time
        from its first bytes and decodes only the records that may hold text: most are scalars."""
        text_tags: list[bytes] = []  # TF2 names the text plugin with a tag's first value only
        for path, data in self.data:
            plugins: dict[str, str] = {}
            for entry in records(data, partial_ok=self.partial_ok):
                if isinstance(entry, Damage):
                    if survey:
                        self.problems.append(Problem(str(path), None, f"byte {entry.offset}: {entry.message}"))
                    continue
                offset, buf = entry
                if survey:
                    if buf[:1] == b"\x09" and len(buf) >= 9:
                        self._time(struct.unpack_from("<d", buf, 1)[0])
                    if b"text" not in buf and not any(t in buf for t in text_tags):
                        continue
                try:
                    event = _event(buf, plugins)
                except (WireError, struct.error, UnicodeDecodeError) as exc:
                    if survey:
                        self.problems.append(Problem(str(path), None, f"byte {offset}: not an Event ({exc}); skipped"))
                    continue
                if survey:
                    text_tags.extend(t.encode() for t, p in plugins.items() if p == "text" and t.encode() not in text_tags)
                yield event

    def _time(self, wall: float) -> None:
        self.start = wall if self.start is None else min(self.start, wall)
        self.end = wall if self.end is None else max(self.end, wall)

    def survey(self) -> None:
        """The first pass: times, text, damage."""
        for _, step, values in self.events(survey=True):
            for tag, kind, payload in values:
                if kind == "text":
                    self._text(tag, step, payload)

    def skipped_problem(self) -> Problem | None:
        """What the second pass met and did not import, said once per run."""
        if not self.skipped:
            return None
        what = "; ".join(f"{kind} ({', '.join(sorted(tags)[:5])}{', …' if len(tags) > 5 else ''})"
                         for kind, tags in sorted(self.skipped.items()))
        return Problem(str(self.files[0].parent), None, f"run {self.name!r}: not imported (only scalars and text are): {what}")

    def _text(self, tag: str, step: int, payload: str) -> None:
        try:
            obj = json.loads(payload) if payload.lstrip().startswith("{") else None
        except ValueError:
            obj = None
        if isinstance(obj, dict):
            self.config[tag] = obj
            return
        self.latest_text[tag] = payload
        self.texts.setdefault(tag, {})[str(step)] = payload

    def record(self, root: Path) -> RunRecord:
        name = root.resolve().name if self.name == "." else self.name
        config: dict[str, Any] = dict(self.config)
        config["_tensorboard"] = {"files": [p.name for p in self.files]}
        summary: dict[str, Any] = dict(self.latest_text)
        if self.texts:
            summary["text"] = self.texts
        model_config = self.config.get("model_config")  # the HF Trainer's model config, as text
        model = model_config.get("_name_or_path") if isinstance(model_config, dict) else None
        return {"name": name, "source": "tensorboard", "status": "finished", "config": config,
                "model": str(model or "")[:500],
                "summary": summary, "started_at": self.start,
                "finished_at": self.end if not self.partial_ok else None,
                "external_id": f"{name}/{self.files[0].name}"[-200:]}

    def points(self) -> Iterator[MetricPoint]:
        """One point per run of events at the same step (add_scalar writes one event per value)."""
        point: MetricPoint | None = None
        for wall, step, values in self.events(survey=False):
            scalars: dict[str, float | None] = {}
            for tag, kind, payload in values:
                if kind == "scalar":
                    scalars[tag] = num(payload)
                elif kind != "text":
                    self.skipped.setdefault(payload, set()).add(tag)
            if not scalars:
                continue
            if point is not None and point["step"] == step and not scalars.keys() & point["values"].keys():
                point["values"].update(scalars)
                continue
            if point is not None:
                yield point
            point = {"step": step, "time": wall, "values": scalars}
        if point is not None:
            yield point


def parse(path: Path, *, partial_ok: bool = False, **_options: Any) -> Iterator[Event]:
    root = path if path.is_dir() else path.parent
    runs = run_dirs(path)
    if not runs:
        yield Problem(str(path), None, "no TensorBoard event files (events.out.tfevents.*) here", fatal=True)
        return
    for name, files in sorted(runs.items()):
        run = _Run(name, files, partial_ok)
        run.survey()
        ref = name if len(runs) > 1 else "tensorboard"
        yield RunEvent(ref, run.record(root))
        yield from run.problems
        yield from batch_points(ref, run.points())
        skipped = run.skipped_problem()
        if skipped:
            yield skipped
