"""A session of the test database of its own, beside Django's connection: as another web or worker process
opens one, or a second transaction in a test of what two of them do at once."""

from __future__ import annotations

import psycopg
from django.db import connection


def session(*, autocommit: bool = False) -> psycopg.Connection:
    params = connection.get_connection_params()
    return psycopg.connect(**{k: v for k, v in params.items() if k not in ("cursor_factory", "context")},
                           autocommit=autocommit)
