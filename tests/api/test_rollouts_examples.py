"""Examples of a batch: new ones are added, a missing prompt or oracle is filled once, and batches of the
same examples (a GRPO step's groups, sent several at a time) do not wait for each other."""

from __future__ import annotations

import threading
from typing import Any

import pytest
from django.db import connection, transaction

from deeprepo_web.runs.ingest.rollouts import rollouts_ingest
from deeprepo_web.runs.models import Example, Rollout
from deeprepo_web.runs.services import run_create
from tests.factories import rollout


def test_a_missing_prompt_or_oracle_is_filled_once_and_never_replaced(team: Any) -> None:
    run, _ = run_create(project=team.project, name="r")
    rollouts_ingest(run=run, rollouts=[rollout("ex-1", uid="u0"), rollout("ex-2", uid="u1", prompt="first")])
    assert Example.objects.get(key="ex-1").prompt is None
    rollouts_ingest(run=run, rollouts=[
        rollout("ex-1", uid="u2", prompt="late", oracle="42"),
        rollout("ex-2", uid="u3", prompt="second", oracle="7"),
    ])
    one, two = Example.objects.get(key="ex-1"), Example.objects.get(key="ex-2")
    assert (one.prompt, one.oracle) == ("late", "42")
    assert (two.prompt, two.oracle) == ("first", "7")  # the prompt it had stays; the empty oracle is filled
    rollouts_ingest(run=run, rollouts=[rollout("ex-1", uid="u4", prompt="later", oracle="43")])
    one.refresh_from_db()
    assert (one.prompt, one.oracle) == ("late", "42")
    assert Example.objects.count() == 2 and Rollout.objects.filter(run=run).count() == 5


@pytest.mark.django_db(transaction=True)
def test_batches_of_the_same_examples_do_not_wait_for_each_other(team: Any) -> None:
    run, _ = run_create(project=team.project, name="r")
    rollouts_ingest(run=run, rollouts=[rollout("ex-1", uid="u0", prompt="p")])
    held, release = threading.Event(), threading.Event()
    errors: list[BaseException] = []

    def first_batch_left_open() -> None:
        try:
            with transaction.atomic():
                rollouts_ingest(run=run, rollouts=[rollout("ex-1", uid="u1", prompt="p")])
                held.set()
                release.wait(60)
        except BaseException as exc:  # noqa: BLE001 - reported by the test below
            errors.append(exc)
            held.set()
        finally:
            connection.close()

    other = threading.Thread(target=first_batch_left_open)
    other.start()
    try:
        assert held.wait(60) and not errors
        # A second batch of the same example while the first is not committed: it must not queue
        # behind it (a lock wait here is an error after 2 s, not a hang).
        with transaction.atomic():
            with connection.cursor() as cur:
                cur.execute("SET LOCAL lock_timeout = '2s'")
            assert rollouts_ingest(run=run, rollouts=[rollout("ex-1", uid="u2", prompt="p")]) == 1
    finally:
        release.set()
        other.join(60)
    assert not errors
    assert sorted(Rollout.objects.filter(run=run).values_list("uid", flat=True)) == ["u0", "u1", "u2"]
    assert Example.objects.filter(key="ex-1").count() == 1
