"""Thin tasks: fetch by id, return if gone, call a service. Ids in, never objects."""

from __future__ import annotations

from workers.celery import app


@app.task(name="deeprepo.ping")
def ping() -> str:
    return "pong"
