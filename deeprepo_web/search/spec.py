"""What a search asks for: the text, how to match it, where, and the rollout filters around it.

Parsed from a query string (page, API, CLI alike); each bad parameter becomes one line in `errors`
and is ignored, so the rest of the search still runs.
"""

from __future__ import annotations

import dataclasses
from dataclasses import dataclass
from typing import Any

from deeprepo_web.front.http import float_param, int_param
from deeprepo_web.search.literals import NEEDED, regex_literal, substring_literal
from deeprepo_web.search.texts import FIELD_LABELS

MODES = {"words": "words and phrases", "substring": "exact substring", "regex": "regular expression"}
MAX_QUERY = 500


@dataclass
class SearchSpec:
    q: str = ""
    mode: str = "words"
    field: str = ""  # "" = everywhere, else a key of texts.FIELDS
    run: str = ""  # a run's public id ("" = every run of the project)
    step_min: int | None = None
    step_max: int | None = None
    reward_min: float | None = None
    reward_max: float | None = None
    tool: str = ""
    stop: str = ""
    label: str = ""  # a label's name
    errors: list[str] = dataclasses.field(default_factory=list)

    @property
    def indexed(self) -> bool:
        """Whether the text indexes can find the candidates (else only walking a bounded scope can)."""
        return self.mode == "words" or literal_run(self.q, self.mode) >= NEEDED

    @property
    def narrowed(self) -> bool:
        return bool(self.q or self.label or self.tool or self.stop or self.step_min is not None
                    or self.step_max is not None or self.reward_min is not None or self.reward_max is not None)

    def params(self) -> dict[str, str]:
        """The spec as a query string's parameters (links to exports, bulk actions, the API)."""
        out = {"q": self.q, "mode": self.mode, "in": self.field, "run": self.run, "tool": self.tool,
               "stop": self.stop, "label": self.label}
        for name in ("step_min", "step_max", "reward_min", "reward_max"):
            value = getattr(self, name)
            if value is not None:
                out[name] = str(value)
        return {k: v for k, v in out.items() if v and not (k == "mode" and v == "words")}


def literal_run(q: str, mode: str) -> int:
    return regex_literal(q) if mode == "regex" else substring_literal(q)


def spec_parse(params: Any) -> SearchSpec:
    errors: list[str] = []
    get = lambda name: (params.get(name) or "").strip()  # noqa: E731
    q = (params.get("q") or "").strip("\n\r")
    if "\x00" in q:
        errors.append("q: the search text holds a NUL character; it was removed")
        q = q.replace("\x00", "")
    if len(q) > MAX_QUERY:
        errors.append(f"q: longer than {MAX_QUERY} characters; cut to {MAX_QUERY}")
        q = q[:MAX_QUERY]
    mode = get("mode") or "words"
    if mode not in MODES:
        errors.append(f"mode: use one of {', '.join(MODES)}, not {mode[:40]!r}")
        mode = "words"
    where = get("in")
    if where not in FIELD_LABELS:
        errors.append(f"in: use one of {', '.join(k for k in FIELD_LABELS if k)}, not {where[:40]!r}")
        where = ""
    if mode == "words":
        q = q.strip()
    elif q and len(q) < 3:
        errors.append(f"q: a {mode} search needs at least 3 characters (an index of 3-letter pieces serves it)")
        q = ""
    run = get("run")[:24]
    step_min = int_param(get("step_min"), "step_min", errors)
    step_max = int_param(get("step_max"), "step_max", errors)
    bounded = bool(run) or (step_min is not None and step_max is not None)
    if q and mode != "words" and not bounded and literal_run(q, mode) < NEEDED:
        # Nothing for the trigram index to use: the search would read every text of the project.
        what = "regular expression" if mode == "regex" else "substring"
        errors.append(f"q: this {what} holds no run of {NEEDED} letters or digits (or a 2-letter word with a "
                      "visible edge, like 'py' in 'db.py') that every match must contain, "
                      "so no index can narrow it and it would read every text of the project; add such a "
                      "word (e.g. 'timeout.*retry' rather than 't.*r'), or pick a run or a step range "
                      "(from and to) to search in")
        q = ""
    return SearchSpec(
        q=q, mode=mode, field=where, run=run, tool=get("tool")[:500], stop=get("stop")[:200],
        label=get("label")[:100], step_min=step_min, step_max=step_max,
        reward_min=float_param(get("reward_min"), "reward_min", errors),
        reward_max=float_param(get("reward_max"), "reward_max", errors),
        errors=errors,
    )
