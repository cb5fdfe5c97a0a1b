"""The runs table's columns: which fixed ones a user hides and which config keys they add, per project.

Saved on the server (explorer.models.RunTableColumns), so the choice follows the user across
browsers, as W&B's run table does. Hidden columns are hidden by a class on the table (the rows are
rendered whole, explorer/rows.py); config columns are extra cells at the end of each row.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from deeprepo_web.accounts.models import Project
from deeprepo_web.explorer.models import RunTableColumns

FIXED = (
    ("kind", "Kind"), ("status", "Status"), ("model", "Model"), ("environment", "Environment"),
    ("tags", "Tags"), ("labels", "Labels"), ("started", "Started"), ("duration", "Duration"),
    ("reward", "Reward"), ("curve", "Reward curve"),
)
FIXED_NAMES = frozenset(name for name, _ in FIXED)
MAX_CONFIG_COLUMNS = 12
MAX_CELL = 60


@dataclass
class Columns:
    hidden: frozenset[str] = frozenset()
    config: list[str] = field(default_factory=list)

    @property
    def table_class(self) -> str:
        return " ".join(f"hide-{name}" for name in sorted(self.hidden))


def columns_for(*, user: Any, project: Project) -> Columns:
    row = RunTableColumns.objects.filter(user=user, project=project).first() if user.is_authenticated else None
    if row is None:
        return Columns()
    return Columns(hidden=frozenset(h for h in row.hidden if h in FIXED_NAMES), config=list(row.config))


def columns_save(*, user: Any, project: Project, shown: Iterable[str], config: Iterable[str],
                 known_keys: Iterable[str]) -> Columns:
    """Keep the choice; unknown column names and config keys no run has are dropped."""
    shown_set = set(shown)
    known = set(known_keys)
    hidden = sorted(FIXED_NAMES - shown_set)
    keys = [k for k in dict.fromkeys(config) if k in known][:MAX_CONFIG_COLUMNS]
    RunTableColumns.objects.update_or_create(user=user, project=project,
                                             defaults={"hidden": hidden, "config": keys})
    return Columns(hidden=frozenset(hidden), config=keys)


def config_value(config: Any, path: str) -> str:
    """The cell of a dotted config key: "—" where the run has no such key."""
    value = config
    for part in path.split("."):
        if not isinstance(value, dict) or part not in value:
            return "—"
        value = value[part]
    text = str(value) if not isinstance(value, bool) else str(value).lower()
    return text if len(text) <= MAX_CELL else text[: MAX_CELL - 1] + "…"
