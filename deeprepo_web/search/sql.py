"""SQL pieces of a search over the source tables' indexed bodies: the match, the hits of every source,
the rollout filters.
Every value goes in as a parameter; only our own constants are formatted in."""

from __future__ import annotations

from typing import Any

from deeprepo_web.search.spec import SearchSpec
from deeprepo_web.search.texts import CONFIG, FIELDS, SPLIT_FROM, SPLIT_TO, TABLES, body_of, fts

Sql = tuple[str, list[Any]]
SOURCES = list(TABLES)


def like_pattern(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _query(spec: SearchSpec) -> str:
    return f"websearch_to_tsquery('{CONFIG}'::regconfig, %s)"


def _words(spec: SearchSpec) -> str:
    return spec.q.translate(str.maketrans(SPLIT_FROM, SPLIT_TO))


def body_match(spec: SearchSpec, src: str, alias: str) -> Sql:
    """The match on the indexed body of source `src` (alias `alias`): what its expression indexes serve."""
    body = body_of(src, alias)
    if spec.mode == "words":
        return f"{fts(body)} @@ {_query(spec)}", [_words(spec)]
    if spec.mode == "substring":
        return f"{body} ILIKE %s", [like_pattern(spec.q)]
    return f"{body} ~* %s", [spec.q]


def _field_match(spec: SearchSpec, alias: str) -> Sql:
    """With "only in <field>": the match on that field alone, beside the indexed body match (which the
    field's text is part of, so the index still narrows the rows)."""
    if not spec.field:
        return "", []
    _, expr = FIELDS[spec.field]
    text = expr.format(a=alias)
    if spec.mode == "words":
        cond, params = f" AND {fts(text)} @@ {_query(spec)}", [_words(spec)]
    elif spec.mode == "substring":
        cond, params = f" AND {text} ILIKE %s", [like_pattern(spec.q)]
    else:
        cond, params = f" AND {text} ~* %s", [spec.q]
    if spec.field == "tool_error":
        cond += f" AND {alias}.is_error"
    return cond, params


def sources_for(spec: SearchSpec) -> list[str]:
    return [FIELDS[spec.field][0]] if spec.field else SOURCES


# Per source: (the hit's columns, FROM, the condition near one rollout `r`, near a set of runs).
_HITS = {
    "turn": ("t.rollout_id, t.index, 'turn', t.id", "runs_turn t", "t.rollout_id = r.id",
             "t.rollout_id IN (SELECT ro.id FROM runs_rollout ro WHERE ro.run_id = ANY(%s))"),
    "call": ("c.rollout_id, (SELECT ti.index FROM runs_turn ti WHERE ti.id = c.turn_id), 'call', c.id",
             "runs_toolcall c", "c.rollout_id = r.id",
             "c.rollout_id IN (SELECT ro.id FROM runs_rollout ro WHERE ro.run_id = ANY(%s))"),
    "rollout": ("o.id, NULL::int, 'rollout', o.id", "runs_rollout o", "o.id = r.id", "o.run_id = ANY(%s)"),
    "prompt": ("ro.id, NULL::int, 'prompt', e.id", "runs_example e JOIN runs_rollout ro ON ro.example_id = e.id",
               "ro.id = r.id", "ro.run_id = ANY(%s)"),
}
_ALIAS = {"turn": "t", "call": "c", "rollout": "o", "prompt": "e"}


def hits_sql(spec: SearchSpec, *, run_ids: list[int], outer: bool = False) -> Sql:
    """Rows (rollout_id, turn_index, src, obj): one per matching turn, call, rollout text or prompt.

    With `outer`, only the hits of the outer query's rollout `r` (a LATERAL subquery that walks the
    rollouts newest first: the fast way when the text is common). Without, every hit the indexes find."""
    parts: list[str] = []
    out_params: list[Any] = []
    for src in sources_for(spec):
        columns, from_, near_one, near_runs = _HITS[src]
        match, params = body_match(spec, src, _ALIAS[src])
        field, field_params = _field_match(spec, _ALIAS[src])
        near, near_params = (near_one, []) if outer else (near_runs, [run_ids])
        parts.append(f"SELECT {columns} FROM {from_} WHERE {near} AND {match}{field}")
        out_params += [*near_params, *params, *field_params]
    return " UNION ALL ".join(parts), out_params


def hits_capped(spec: SearchSpec, cap: int) -> Sql:
    """How many bodies match, counting no further than `cap`."""
    parts: list[str] = []
    params: list[Any] = []
    for src in sources_for(spec):
        match, match_params = body_match(spec, src, "x")
        parts.append(f"SELECT 1 FROM {TABLES[src]} x WHERE {match}")
        params += match_params
    return f"SELECT count(*) FROM ({' UNION ALL '.join(parts)} LIMIT {int(cap)}) n", params


def rollout_filters(spec: SearchSpec, *, run_ids: list[int], label_id: int | None) -> Sql:
    """Conditions on `r` (runs_rollout): the run set and the filters around the search."""
    conds = ["r.run_id = ANY(%s)"]
    params: list[Any] = [run_ids]
    for column, op, value in (("step", ">=", spec.step_min), ("step", "<=", spec.step_max),
                              ("reward", ">=", spec.reward_min), ("reward", "<=", spec.reward_max)):
        if value is not None:
            conds.append(f"r.{column} {op} %s")
            params.append(value)
    if spec.stop:
        conds.append("r.stop_condition = %s")
        params.append(spec.stop)
    if spec.tool:
        conds.append("EXISTS (SELECT 1 FROM runs_toolcall tc WHERE tc.rollout_id = r.id AND tc.name = %s)")
        params.append(spec.tool)
    if label_id is not None:
        conds.append("EXISTS (SELECT 1 FROM labels_mark lm WHERE lm.rollout_id = r.id AND lm.label_id = %s "
                     "AND lm.status <> 'rejected')")
        params.append(label_id)
    return " AND ".join(conds), params
