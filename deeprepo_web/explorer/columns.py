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


@dataclass(frozen=True)
class Column:
    """One fixed column of the runs table: its header and its cell (a format_html template of
    explorer/rows.py's fields). The header, every row and the colspans all come from TABLE."""

    name: str  # a hideable one's name in RunTableColumns.hidden; its cells carry class c-<name>
    label: str
    cell: str
    sort: str = ""  # the sort its header link sets (explorer.selectors.RUN_SORTS); "" when not sortable
    num: bool = False  # right-aligned figures
    hideable: bool = True

    @property
    def th_class(self) -> str:
        """The header's classes: the same c-<name> as its cells, which the hide-<name> classes hide."""
        base = "sel" if self.name == "sel" else f"c-{self.name}" if self.hideable else ""
        return f"{base} num".strip() if self.num else base


TABLE = (
    Column("sel", "Select", '<td class="sel"><input type="checkbox" class="run-select" value="{id}" '
           'aria-label="Select {name}"></td>', hideable=False),
    Column("name", "Name", '<td class="name"><a href="{url}">{short_name}</a>{checkpoint}{notes}</td>', sort="name",
           hideable=False),
    Column("kind", "Kind", '<td class="c-kind"><span class="kind kind-{kind}">{kind}</span></td>', sort="kind"),
    Column("status", "Status", '<td class="c-status">{status}</td>', sort="status"),
    Column("model", "Model", '<td class="clip c-model" title="{model}">{model_shown}</td>', sort="model"),
    Column("environment", "Environment", '<td class="clip c-environment" title="{environment}">{environment_shown}</td>',
           sort="environment"),
    Column("tags", "Tags", '<td class="tags c-tags">{tags}</td>'),
    Column("labels", "Labels", '<td class="labels c-labels">{labels}</td>'),
    Column("started", "Started", '<td class="nowrap muted c-started" title="{when}">{when_ago}</td>', sort="started"),
    Column("duration", "Duration", '<td class="num nowrap c-duration">{duration}</td>', num=True),
    Column("reward", "Reward", '<td class="num reward c-reward"{reward_title}>{reward}</td>', sort="metric:reward",
           num=True),
    Column("curve", "Reward curve", '<td class="spark c-curve">{spark}</td>'),
)
FIXED = tuple((c.name, c.label) for c in TABLE if c.hideable)
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
