"""What an import says it did: runs made or found, rows stored, and each problem with file:line."""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

MAX_PROBLEMS = 500  # kept in the report; the rest are counted


@dataclass
class RunReport:
    ref: str
    name: str
    public_id: str = ""
    kind: str = ""
    created: bool = False
    rollouts_received: int = 0
    rollouts: int = 0  # new rows stored
    points: int = 0  # new metric values stored
    media: int = 0  # new media files kept as artifacts (W&B images, HTML, audio, video)
    rewards_attached: int = 0  # rollouts of this run that got a reward from another file


@dataclass
class ImportReport:
    path: str
    format: str | None = None
    runs: list[RunReport] = field(default_factory=list)
    problems: list[dict[str, Any]] = field(default_factory=list)
    problems_total: int = 0
    rows: int = 0  # rollouts + metric points read
    seconds: float = 0.0

    @property
    def imported_anything(self) -> bool:
        return bool(self.runs)

    @property
    def fatal(self) -> bool:
        return any(p.get("fatal") for p in self.problems)

    def problem(self, file: str, line: int | None, message: str, fatal: bool = False) -> None:
        self.problems_total += 1
        if len(self.problems) < MAX_PROBLEMS:
            self.problems.append({"file": file, "line": line, "message": message, "fatal": fatal})

    def as_dict(self) -> dict[str, Any]:
        return {
            "path": self.path,
            "format": self.format,
            "runs": [{**asdict(r), "already": r.rollouts_received - r.rollouts} for r in self.runs],
            "problems": self.problems,
            "problems_total": self.problems_total,
            "rows": self.rows,
            "seconds": round(self.seconds, 3),
        }


def exc_line(exc: Exception) -> str:
    """An exception as one line for a report or a job's error: its type and its first line."""
    text = str(exc).strip().splitlines()[0] if str(exc).strip() else ""
    return f"{type(exc).__name__}: {text}"[:500]
