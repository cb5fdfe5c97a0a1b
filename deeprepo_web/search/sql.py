"""SQL pieces of a search: the match of one text expression, the matching rows of every source,
and the rollout filters. Every value goes in as a parameter; only our own constants are formatted in."""

from __future__ import annotations

from typing import Any

from deeprepo_web.search.spec import SearchSpec
from deeprepo_web.search.texts import CONFIG, FIELDS, SOURCES, SPLIT_FROM, SPLIT_TO, fts

Sql = tuple[str, list[Any]]


def like_pattern(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def match(expr: str, spec: SearchSpec) -> Sql:
    if spec.mode == "words":
        words = spec.q.translate(str.maketrans(SPLIT_FROM, SPLIT_TO))
        return f"{fts(expr)} @@ websearch_to_tsquery('{CONFIG}'::regconfig, %s)", [words]
    if spec.mode == "substring":
        return f"{expr} ILIKE %s", [like_pattern(spec.q)]
    return f"{expr} ~* %s", [spec.q]


def _source_match(source: str, alias: str, spec: SearchSpec) -> Sql:
    """The combined text's match (what the index serves), and the one field's recheck if asked."""
    sql, params = match(SOURCES[source].format(a=alias), spec)
    if spec.field:
        field_sql, field_params = match(FIELDS[spec.field][1].format(a=alias), spec)
        sql, params = f"{sql} AND {field_sql}", params + field_params
        if spec.field == "tool_error":
            sql += f" AND {alias}.is_error"
    return sql, params


def sources_for(spec: SearchSpec) -> list[str]:
    return [FIELDS[spec.field][0]] if spec.field else list(SOURCES)


def hits_sql(spec: SearchSpec, *, run_ids: list[int], project_id: int, outer: bool = False) -> Sql:
    """Rows (rollout_id, turn_index, src, obj): one per matching turn, call, rollout text or prompt.

    With `outer`, only the hits of the outer query's rollout `r` (a LATERAL subquery that walks the
    rollouts newest first: the fast way when the text is common). Without, every hit the indexes find."""
    parts: list[str] = []
    params: list[Any] = []
    for source in sources_for(spec):
        if source == "turn":
            sql, p = _source_match("turn", "t", spec)
            near = "t.rollout_id = r.id AND " if outer else ""
            parts.append(f"SELECT t.rollout_id, t.index AS turn_index, 'turn' AS src, t.id AS obj "
                         f"FROM runs_turn t WHERE {near}{sql}")
        elif source == "call":
            sql, p = _source_match("call", "c", spec)
            near = "c.rollout_id = r.id AND " if outer else ""
            parts.append("SELECT c.rollout_id, (SELECT ti.index FROM runs_turn ti WHERE ti.id = c.turn_id), "
                         f"'call', c.id FROM runs_toolcall c WHERE {near}{sql}")
        elif source == "rollout":
            sql, p = _source_match("rollout", "ro", spec)
            near, np = ("ro.id = r.id", []) if outer else ("ro.run_id = ANY(%s)", [run_ids])
            parts.append(f"SELECT ro.id, NULL::int, 'rollout', ro.id FROM runs_rollout ro WHERE {near} AND {sql}")
            p = [*np, *p]
        else:
            sql, p = _source_match("prompt", "e", spec)
            if outer:
                parts.append(f"SELECT r.id, NULL::int, 'prompt', e.id FROM runs_example e "
                             f"WHERE e.id = r.example_id AND {sql}")
            else:
                parts.append("SELECT ro.id, NULL::int, 'prompt', e.id FROM runs_example e "
                             "JOIN runs_rollout ro ON ro.example_id = e.id "
                             f"WHERE e.project_id = %s AND ro.run_id = ANY(%s) AND {sql}")
                p = [project_id, run_ids, *p]
        params += p
    return " UNION ALL ".join(parts), params


def source_hits_capped(spec: SearchSpec, cap: int) -> Sql:
    """How many rows the indexes find, counting no further than `cap` per source."""
    parts = []
    params: list[Any] = []
    aliases = {"turn": "t", "call": "c", "rollout": "ro", "prompt": "e"}
    tables = {"turn": "runs_turn", "call": "runs_toolcall", "rollout": "runs_rollout", "prompt": "runs_example"}
    for source in sources_for(spec):
        sql, p = _source_match(source, aliases[source], spec)
        parts.append(f"(SELECT count(*) FROM (SELECT 1 FROM {tables[source]} {aliases[source]} WHERE {sql} "
                     f"LIMIT {int(cap)}) x)")
        params += p
    return "SELECT " + " + ".join(parts), params


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
