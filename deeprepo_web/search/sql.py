"""SQL pieces of a search over search_doc: the match, the hits of every source, the rollout filters.
Every value goes in as a parameter; only our own constants are formatted in."""

from __future__ import annotations

from typing import Any

from deeprepo_web.search.spec import SearchSpec
from deeprepo_web.search.texts import CONFIG, FIELDS, SPLIT_FROM, SPLIT_TO, TABLES, fts

Sql = tuple[str, list[Any]]
SOURCES = list(TABLES)


def like_pattern(text: str) -> str:
    return "%" + text.replace("\\", "\\\\").replace("%", "\\%").replace("_", "\\_") + "%"


def _query(spec: SearchSpec) -> str:
    return f"websearch_to_tsquery('{CONFIG}'::regconfig, %s)"


def _words(spec: SearchSpec) -> str:
    return spec.q.translate(str.maketrans(SPLIT_FROM, SPLIT_TO))


def doc_match(spec: SearchSpec) -> Sql:
    """The match on search_doc `d` (what its GIN indexes serve)."""
    if spec.mode == "words":
        return f"{fts('d.body')} @@ {_query(spec)}", [_words(spec)]  # the expression search_doc_tsv indexes
    if spec.mode == "substring":
        return "d.body ILIKE %s", [like_pattern(spec.q)]
    return "d.body ~* %s", [spec.q]


def _field_match(spec: SearchSpec) -> Sql:
    """With "only in <field>": a join to the source row and the match on that field alone."""
    if not spec.field:
        return "", []
    source, expr = FIELDS[spec.field]
    alias = "f"
    text = expr.format(a=alias)
    if spec.mode == "words":
        cond, params = f"{fts(text)} @@ {_query(spec)}", [_words(spec)]
    elif spec.mode == "substring":
        cond, params = f"{text} ILIKE %s", [like_pattern(spec.q)]
    else:
        cond, params = f"{text} ~* %s", [spec.q]
    if spec.field == "tool_error":
        cond += f" AND {alias}.is_error"
    return f" JOIN {TABLES[source]} {alias} ON {alias}.id = d.obj AND {cond}", params


def sources_for(spec: SearchSpec) -> list[str]:
    return [FIELDS[spec.field][0]] if spec.field else SOURCES


def hits_sql(spec: SearchSpec, *, run_ids: list[int], outer: bool = False, doc_runs: bool = True) -> Sql:
    """Rows (rollout_id, turn_index, src, obj): one per matching turn, call, rollout text or prompt.

    With `outer`, only the hits of the outer query's rollout `r` (a LATERAL subquery that walks the
    rollouts newest first: the fast way when the text is common). Without, every hit the indexes find,
    in `run_ids`; with `doc_runs` False the documents' own run is not tested (the caller's join to
    runs_rollout keeps the runs)."""
    match, params = doc_match(spec)
    join, join_params = _field_match(spec)
    sources = sources_for(spec)
    parts: list[str] = []
    out_params: list[Any] = []
    direct = [s for s in sources if s != "prompt"]
    if direct:
        near = ""
        near_params: list[Any] = []
        if outer:
            near = " AND d.rollout_id = r.id"
        elif doc_runs:
            near, near_params = " AND d.run_id = ANY(%s)", [run_ids]
        parts.append(f"SELECT d.rollout_id, d.turn_index, d.src, d.obj FROM search_doc d{join} "
                     f"WHERE d.src = ANY(%s){near} AND {match}")
        out_params += [*join_params, direct, *near_params, *params]
    if "prompt" in sources:
        if outer:
            parts.append(f"SELECT r.id, NULL::int, d.src, d.obj FROM search_doc d{join} "
                         f"WHERE d.src = 'prompt' AND d.obj = r.example_id AND {match}")
            out_params += [*join_params, *params]
        else:
            parts.append(f"SELECT ro.id, NULL::int, d.src, d.obj FROM search_doc d{join} "
                         "JOIN runs_rollout ro ON ro.example_id = d.obj "
                         f"WHERE d.src = 'prompt' AND ro.run_id = ANY(%s) AND {match}")
            out_params += [*join_params, run_ids, *params]
    return " UNION ALL ".join(parts), out_params


def hits_estimate(spec: SearchSpec) -> Sql:
    """The planner's guess of how many bodies match (EXPLAIN, nothing read): the statistics of the
    words index (its most common lexemes) or of the body (pattern selectivity)."""
    match, params = doc_match(spec)
    return (f"EXPLAIN (FORMAT JSON) SELECT 1 FROM search_doc d WHERE d.src = ANY(%s) AND {match}",
            [sources_for(spec), *params])


def hits_capped(spec: SearchSpec, cap: int) -> Sql:
    """How many bodies match, counting no further than `cap`."""
    match, params = doc_match(spec)
    return (f"SELECT count(*) FROM (SELECT 1 FROM search_doc d WHERE d.src = ANY(%s) AND {match} "
            f"LIMIT {int(cap)}) x", [sources_for(spec), *params])


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
