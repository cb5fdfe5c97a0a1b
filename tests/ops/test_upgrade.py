"""Upgrade: the previous release's code (git commit PREVIOUS, unpacked from this repository) makes
its schema and fills it through its own API; today's `migrate` upgrades that database, and
today's pages read what the previous release's pages read."""

from __future__ import annotations

import json
import re
import sys

from tests.ops.upgrade import REPO, release_filled, run

PREVIOUS = "f796ccf"  # the release before audit, retention and ops; move it forward at each release


def test_previous_release_database_upgrades(tmp_path, upgrade_db):
    previous, data = release_filled(PREVIOUS, tmp_path)
    pages = [sys.executable, str(REPO / "tests" / "ops" / "page_numbers.py"), "demo"]
    before = json.loads(run(pages, previous, DEEPREPO_DATA_DIR=data).strip().splitlines()[-1])

    out = run([sys.executable, "manage.py", "migrate", "--no-input"], REPO, DEEPREPO_DATA_DIR=data)
    assert "Applying" in out  # today's release has migrations the previous one had not
    after = json.loads(run(pages, REPO, DEEPREPO_DATA_DIR=data).strip().splitlines()[-1])
    assert sorted(after) == sorted(before) and len(before) == 1 + 2 * 2 + 2 * 3
    # Menus and panels may be added between releases; every number a page showed is still shown, in order.
    for page, text in before.items():
        # Lists page by cursor now, with no page numbers, and a single page shows no pager: the old
        # pagers' "Page 1 · 2 runs" and "page 1" are the texts that went on purpose.
        text = re.sub(r"(← Previous )?\b[Pp]age \d+( · \d+ (run|rollout)s?)?( Next →)?", "", text)
        shown = iter(re.findall(r"\d+(?:\.\d+)?", after[page]))
        assert all(n in shown for n in re.findall(r"\d+(?:\.\d+)?", text)), page
    assert "before-a" in after["project"] and "before-b" in after["project"]
    # The pages that came with the upgrade work on the old data too.
    check = ("from django.test import Client; from django.contrib.auth.models import User; c = Client(); "
             "c.force_login(User.objects.get(username='owner')); "
             "print(c.get('/p/demo/settings/').status_code, c.get('/p/demo/settings/audit/').status_code)")
    shown = run([sys.executable, "manage.py", "shell", "-c", check], REPO, DEEPREPO_DATA_DIR=data)
    assert shown.strip().splitlines()[-1].split() == ["200", "200"]
