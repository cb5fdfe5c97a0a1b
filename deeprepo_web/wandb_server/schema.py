"""The GraphQL schema (schema.graphql) with its resolvers bound, run by graphql-core's executor.

Validation, fragments, `@include`, introspection and a missing operationName are the executor's;
an operation or field the schema does not hold is answered with a GraphQL error (HTTP 200), which
the SDK takes as "not supported by this server" and goes on.
"""

from __future__ import annotations

import json
import logging
from functools import cache
from pathlib import Path
from typing import Any

from graphql import ExecutionResult, GraphQLSchema, build_schema, graphql_sync

from deeprepo_web.wandb_server import resolvers

log = logging.getLogger(__name__)


def _json_string(value: Any) -> str:
    return value if isinstance(value, str) else json.dumps(value)


def _json_in(value: Any) -> Any:
    """A JSONString argument as the SDK sends it (a string holding JSON, NaN allowed)."""
    if isinstance(value, str):
        try:
            return json.loads(value)
        except ValueError:
            return value
    return value


@cache
def schema() -> GraphQLSchema:
    built = build_schema((Path(__file__).with_name("schema.graphql")).read_text())
    json_string = built.type_map["JSONString"]
    json_string.serialize = _json_string  # type: ignore[attr-defined]
    json_string.parse_value = _json_in  # type: ignore[attr-defined]
    for (type_name, field), fn in resolvers.RESOLVERS.items():
        built.type_map[type_name].fields[field].resolve = fn  # type: ignore[attr-defined]
    return built


def execute(*, query: str, variables: dict[str, Any] | None, operation: str | None,
            context: resolvers.Context) -> ExecutionResult:
    result = graphql_sync(schema(), query, variable_values=variables, operation_name=operation,
                          context_value=context)
    if result.errors:
        log.info("wandb graphql %s: %s", operation or "(unnamed)", "; ".join(e.message for e in result.errors))
    return result
