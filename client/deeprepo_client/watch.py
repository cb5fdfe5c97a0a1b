"""`deeprepo watch DIR`: follow what a running trainer writes and stream new rows to the server.

Each pass parses the folder with the same parsers as the server's importer (partial_ok: a last
line still being written is left for the next pass), keeps only rows not sent before, appends
them to one spool per run (the client's write-ahead log) and drains the spools through the API.

What was sent is remembered in a state folder (default DIR/.deeprepo-watch): per run, the highest
step sent for each metric key and the uids of the rollouts sent. A restart resumes from there.
Rows are spooled before they are marked sent, so a crash in between only re-sends them, and the
server ignores re-sent rows (metrics by (key, step), rollouts by uid): nothing is doubled.
"""

from __future__ import annotations

import hashlib
import json
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from deeprepo_client.formats import detect, parse
from deeprepo_client.formats._stepfiles import LEDGER, Ledger
from deeprepo_client.records import MetricsEvent, Problem, RewardsEvent, RolloutsEvent, RunEvent
from deeprepo_client.spool import Spool
from deeprepo_client.transport import Refused, ServerAway, Transport, drain

STATE_DIRNAME = ".deeprepo-watch"
ROLLOUT_BATCH = 50  # rollouts per spool op (one request each)
POINT_BATCH = 500  # metric points per spool op
# Fields of a parser's RunRecord that POST /runs takes.
_RUN_FIELDS = ("name", "kind", "model", "adapter", "environment", "method", "config", "tags", "notes",
               "external_id", "source", "checkpoint_step")


def _uid(record: dict[str, Any]) -> str:
    canonical = json.dumps(record, sort_keys=True, ensure_ascii=False, separators=(",", ":"), default=str)
    return hashlib.sha256(canonical.encode("utf-8", "replace")).hexdigest()[:32]


@dataclass
class RunState:
    local_id: str
    name: str
    metrics: dict[str, int] = field(default_factory=dict)  # key -> highest step spooled
    summary: dict[str, Any] = field(default_factory=dict)  # last summary sent
    config: dict[str, Any] = field(default_factory=dict)  # last config sent
    uids: set[str] = field(default_factory=set)


@dataclass
class PassResult:
    new_rollouts: int = 0
    new_points: int = 0
    problems: list[str] = field(default_factory=list)
    refused: list[str] = field(default_factory=list)
    server_away: str | None = None
    runs: dict[str, str | None] = field(default_factory=dict)  # run name -> server id


class Watcher:
    def __init__(self, directory: str | Path, transport: Transport, *, project: str | None = None,
                 state_dir: str | Path | None = None, fmt: str | None = None,
                 out: Callable[[str], None] | None = None, into_run: str | None = None) -> None:
        self.dir = Path(directory).resolve()
        self.transport = transport
        self.project = project
        self.fmt = fmt
        self.into_run = into_run  # an existing run (a job's) that the folder's train run fills
        self.state_dir = Path(state_dir) if state_dir else self.dir / STATE_DIRNAME
        self.spool_root = self.state_dir / "spool"
        self.out = out or (lambda line: print(line, flush=True))
        self.runs: dict[str, RunState] = {}
        self.spools: dict[str, Spool] = {}
        self.ledger = Ledger()  # step files sent whole (framework dumps): skipped while unchanged
        self._printed: set[str] = set()
        self._load()

    # ------------------------------------------------------------ state on disk

    def _state_file(self) -> Path:
        return self.state_dir / "state.json"

    def _uids_file(self, local_id: str) -> Path:
        return self.state_dir / f"{local_id}.uids"

    def _load(self) -> None:
        try:
            data = json.loads(self._state_file().read_text())
        except FileNotFoundError:
            return
        except ValueError as exc:
            raise SystemExit(f"deeprepo watch: {self._state_file()} is damaged ({exc}); move it away to start over") from exc
        self.ledger.done = {k: list(v) for k, v in data.get("files", {}).items()}
        for ref, r in data.get("runs", {}).items():
            st = RunState(local_id=r["local_id"], name=r.get("name", ref), metrics=dict(r.get("metrics", {})),
                          summary=dict(r.get("summary", {})), config=dict(r.get("config", {})))
            try:
                with open(self._uids_file(st.local_id)) as fh:
                    # a torn last line (crash mid-write) was never marked sent: drop it
                    st.uids = {line[:-1] for line in fh if line.endswith("\n")}
            except FileNotFoundError:
                pass
            self.runs[ref] = st
            self.spools[ref] = Spool(self.spool_root / st.local_id)

    def _save(self) -> None:
        self.state_dir.mkdir(parents=True, exist_ok=True)
        data = {"dir": str(self.dir), "runs": {ref: {"local_id": s.local_id, "name": s.name, "metrics": s.metrics,
                                                     "summary": s.summary, "config": s.config}
                                               for ref, s in self.runs.items()},
                "files": self.ledger.done}
        tmp = self._state_file().with_suffix(".tmp")
        tmp.write_text(json.dumps(data))
        os.replace(tmp, self._state_file())

    def _mark_sent(self, st: RunState, uids: list[str]) -> None:
        with open(self._uids_file(st.local_id), "a") as fh:
            fh.write("".join(u + "\n" for u in uids))
        st.uids.update(uids)

    # ------------------------------------------------------------ one pass

    def _run(self, ref: str, record: dict[str, Any]) -> tuple[RunState, Spool]:
        st = self.runs.get(ref)
        if st is None:
            local_id = hashlib.sha256(f"{self.dir}\x1f{ref}".encode()).hexdigest()[:24]
            create = {k: record[k] for k in _RUN_FIELDS if record.get(k) not in (None, "")}
            create["status"] = "running"  # a watched trainer is still writing
            create.setdefault("name", ref)
            create.setdefault("external_id", f"watch:{local_id}")
            if self.project:
                create["project"] = self.project
            parent = record.get("parent_ref")
            if parent in self.spools:
                server_id = self._server_id(parent)
                if server_id:
                    create["parent_run_id"] = server_id
            self.state_dir.mkdir(parents=True, exist_ok=True)
            st = RunState(local_id=local_id, name=str(create["name"]), config=dict(create.get("config") or {}))
            self.runs[ref] = st
            self.spools[ref] = Spool.create(self.spool_root, local_id, create, server_id=self._into(record))
            self._save()
        return st, self.spools[ref]

    def _into(self, record: dict[str, Any]) -> str | None:
        """--into-run: the first train run of the folder goes into that run instead of a new one."""
        if not self.into_run or record.get("kind", "train") != "train":
            return None
        taken = any(sp.read_meta().get("server_id") == self.into_run for sp in self.spools.values())
        return None if taken else self.into_run

    def _is_into(self, ref: str) -> bool:
        """The run is --into-run's: its config is the job's, not the folder's."""
        return bool(self.into_run) and self.spools[ref].read_meta().get("server_id") == self.into_run

    def _server_id(self, ref: str) -> str | None:
        """The server's id of a run, creating it now if needed: an eval run links to its train run
        when it is created, so the train run must exist first. None while the server is away."""
        spool = self.spools[ref]
        server_id = spool.read_meta().get("server_id")
        if not server_id:
            try:
                drain(spool, self.transport)
            except (ServerAway, Refused):
                return None
            server_id = spool.read_meta().get("server_id")
        return str(server_id) if server_id else None

    def pass_once(self) -> PassResult:
        result = PassResult()
        if self.fmt is None and detect(self.dir) is None:
            return result  # nothing recognisable written yet
        token = LEDGER.set(self.ledger)
        try:
            self._parse_pass(result)
        finally:
            LEDGER.reset(token)
        # every row of the files read whole is in a spool now: later passes skip those files
        self.ledger.done.update(self.ledger.read)
        self.ledger.read = {}
        self._save()
        for ref, spool in self.spools.items():
            try:
                sent = drain(spool, self.transport)
            except ServerAway as exc:
                result.server_away = str(exc)
                break
            except Refused as exc:  # the run itself was refused (e.g. wrong project): nothing else can go
                result.refused.append(f"{self.runs[ref].name}: {exc.message}")
                continue
            result.refused.extend(f"{self.runs[ref].name}: {line}" for line in sent.rejected)
        for ref, st in self.runs.items():
            result.runs[st.name] = self.spools[ref].read_meta().get("server_id")
        return result

    def _parse_pass(self, result: PassResult) -> None:
        for ev in parse(self.dir, fmt=self.fmt, partial_ok=True):
            if isinstance(ev, Problem):
                text = str(ev)
                if text not in self._printed:
                    self._printed.add(text)
                    result.problems.append(text)
            elif isinstance(ev, RunEvent):
                st, spool = self._run(ev.ref, dict(ev.run))
                summary = ev.run.get("summary") or {}
                if summary and summary != st.summary:
                    spool.append("update", {"summary": summary})
                    st.summary = dict(summary)
                config = ev.run.get("config") or {}
                if config and config != st.config and not self._is_into(ev.ref):
                    # written after the run began (a TensorBoard writer's hyperparameter text)
                    spool.append("update", {"config": config})
                    st.config = dict(config)
            elif isinstance(ev, MetricsEvent):
                result.new_points += self._metrics(ev)
            elif isinstance(ev, RolloutsEvent):
                result.new_rollouts += self._rollouts(ev)
            elif isinstance(ev, RewardsEvent):
                pass  # attaching results to other runs is the server importer's job

    def _metrics(self, ev: MetricsEvent) -> int:
        st, spool = self._run(ev.ref, {"name": ev.ref})
        fresh: list[dict[str, Any]] = []
        highest = dict(st.metrics)
        for point in ev.points:
            step = int(point["step"])
            values = {k: v for k, v in point["values"].items() if step > st.metrics.get(k, -(1 << 62))}
            if not values:
                continue
            fresh.append({"step": step, "time": point.get("time"), "values": values})
            for k in values:
                highest[k] = max(highest.get(k, step), step)
        for i in range(0, len(fresh), POINT_BATCH):
            spool.append("metrics", fresh[i:i + POINT_BATCH])
        st.metrics = highest
        return sum(len(p["values"]) for p in fresh)

    def _rollouts(self, ev: RolloutsEvent) -> int:
        st, spool = self._run(ev.ref, {"name": ev.ref})
        fresh: list[dict[str, Any]] = []
        for r in ev.rollouts:
            record = dict(r)
            uid = str(record.get("uid") or _uid(record))
            record["uid"] = uid
            if uid not in st.uids:
                fresh.append(record)
        for i in range(0, len(fresh), ROLLOUT_BATCH):
            chunk = fresh[i:i + ROLLOUT_BATCH]
            spool.append("rollouts", chunk)
            self._mark_sent(st, [r["uid"] for r in chunk])
        return len(fresh)


def watch(directory: str | Path, transport: Transport, *, project: str | None = None, interval: float = 5.0,
          once: bool = False, state_dir: str | Path | None = None, fmt: str | None = None,
          into_run: str | None = None) -> int:
    """Poll until interrupted (or one pass with once=True). Returns a process exit code."""
    watcher = Watcher(directory, transport, project=project, state_dir=state_dir, fmt=fmt, into_run=into_run)
    away_reported = False
    while True:
        result = watcher.pass_once()
        for line in result.problems:
            print(f"deeprepo watch: {line}", file=sys.stderr, flush=True)
        for line in result.refused:
            print(f"deeprepo watch: refused: {line}", file=sys.stderr, flush=True)
        if result.server_away:
            if not away_reported:
                print(f"deeprepo watch: server away ({result.server_away}); rows stay spooled in "
                      f"{watcher.spool_root} and go when it is back", file=sys.stderr, flush=True)
            away_reported = True
        else:
            away_reported = False
        if result.new_rollouts or result.new_points or once:
            names = ", ".join(f"{n} -> {i or '(not created yet)'}" for n, i in result.runs.items()) or "nothing yet"
            watcher.out(f"+{result.new_rollouts} rollouts, +{result.new_points} points; runs: {names}")
        if once:
            return 1 if (result.refused or result.server_away) else 0
        try:
            time.sleep(interval)
        except KeyboardInterrupt:
            return 0
