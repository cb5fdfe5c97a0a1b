from __future__ import annotations

from collections.abc import Iterator

import psycopg
import pytest

from tests.ops.upgrade import ADMIN_URL, DB


@pytest.fixture
def upgrade_db() -> Iterator[None]:
    """An empty `DB` for the upgrade tests, dropped after the test."""
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
        conn.execute(f'CREATE DATABASE "{DB}"')
    yield
    with psycopg.connect(ADMIN_URL, autocommit=True) as conn:
        conn.execute(f'DROP DATABASE IF EXISTS "{DB}" WITH (FORCE)')
