"""The compare page reproduces seed 002's report from the ingested rollouts."""

from __future__ import annotations

import re
from typing import Any

import pytest

from tests.compare.seed002 import seed_002

pytestmark = pytest.mark.django_db


def _url(runs: list[Any], **extra: str) -> str:
    q = "runs=" + ",".join(r.public_id for r in runs)
    for k, v in extra.items():
        q += f"&{k}={v}"
    return f"/p/demo/compare/?{q}"


def _text(html: str) -> str:
    return re.sub(r"\s+", " ", re.sub(r"<[^>]+>", " ", html))


@pytest.fixture
def seeded(team: Any) -> dict[str, Any]:
    return seed_002(team.project)


def _three(seeded: dict[str, Any]) -> list[Any]:
    return [seeded["Qwen3-8B (untrained)"], seeded["Qwen3-30B-A3B (untrained)"], seeded["Qwen3-30B-A3B (GRPO trained)"]]


def test_page_shows_seed_002_numbers(client: Any, team: Any, seeded: dict[str, Any]) -> None:
    client.force_login(team.viewer)
    runs = _three(seeded)
    resp = client.get(_url(runs, baseline=runs[1].public_id))
    assert resp.status_code == 200
    text = _text(resp.content.decode())
    assert "0.785 (σ 0.100)" in text
    assert "0.987 (σ 0.018)" in text
    assert "0.551 (σ 0.176)" in text
    assert "0.636 — 0.900" in text and "0.962 — 1.000" in text
    assert "8.67 (5–18)" in text and "6.00 (6–6)" in text
    # Turn σ of the report (over rollouts, ddof 0).
    assert "4.422" in text and "0.000" in text
    # Delta of the trained run against the untrained 30B baseline: +0.202, +25.7 %.
    assert "+0.202 (+25.7%)" in text
    # Zero-delegation rate: 1/6 for the 8B run (the 0.2 outlier), 0/6 for the 30B runs.
    assert "17% (1/6)" in text and "0% (0/6)" in text
    # Input tokens per rollout as the report prints them (14598.5 / 8585.167).
    assert "14,598" in text or "14,599" in text
    assert "8,585" in text
    # The 18-turn rollout is flagged as an outlier of the untrained run.
    assert "1 turn outlier" in text


def test_effects_table_matches_report(client: Any, team: Any, seeded: dict[str, Any]) -> None:
    client.force_login(team.viewer)
    runs = _three(seeded)
    effects = "A>B:Model size effect;B>C:RL training effect;A>C:Combined"
    text = _text(client.get(_url(runs, effects=effects)).content.decode())
    assert re.search(r"Model size effect .*? \+0\.234 \+42\.5%", text)
    assert re.search(r"RL training effect .*? \+0\.202 \+25\.7%", text)
    assert re.search(r"Combined .*? \+0\.436 \+79\.1%", text)


def test_markdown_export(client: Any, team: Any, seeded: dict[str, Any]) -> None:
    client.force_login(team.viewer)
    runs = _three(seeded)
    resp = client.get(_url(runs, baseline=runs[1].public_id, format="md",
                            effects="A>B:Model size effect;B>C:RL training effect;A>C:Combined"))
    assert resp.status_code == 200
    assert resp["Content-Type"].startswith("text/markdown")
    md = resp.content.decode()
    header = md.splitlines()[2]
    assert header.startswith("| Metric | Qwen3-8B (untrained) | Qwen3-30B-A3B (untrained) | Qwen3-30B-A3B (GRPO trained) |")
    assert "| Average reward | 0.551 (σ 0.176) | 0.785 (σ 0.100) | 0.987 (σ 0.018) |" in md
    assert "| Reward range | 0.200 — 0.729 | 0.636 — 0.900 | 0.962 — 1.000 |" in md
    assert "| Average model turns (range) | 3.67 (2–5) | 8.67 (5–18) | 6.00 (6–6) |" in md
    assert "| RL training effect | Qwen3-30B-A3B (untrained) → Qwen3-30B-A3B (GRPO trained) | +0.202 | +25.7% |" in md
    assert "| Model size effect | Qwen3-8B (untrained) → Qwen3-30B-A3B (untrained) | +0.234 | +42.5% |" in md
    assert "| Combined | Qwen3-8B (untrained) → Qwen3-30B-A3B (GRPO trained) | +0.436 | +79.1% |" in md
    assert "paired by example" in md


def test_csv_export(client: Any, team: Any, seeded: dict[str, Any]) -> None:
    import csv
    import io

    client.force_login(team.viewer)
    runs = _three(seeded)
    resp = client.get(_url(runs, baseline=runs[1].public_id, format="csv"))
    rows = list(csv.DictReader(io.StringIO(resp.content.decode())))
    reward = {r["run_name"]: r for r in rows if r["metric"] == "reward"}
    assert float(reward["Qwen3-30B-A3B (untrained)"]["value"]) == pytest.approx(0.785167, abs=1e-5)
    trained = reward["Qwen3-30B-A3B (GRPO trained)"]
    assert float(trained["delta"]) == pytest.approx(0.202167, abs=1e-5)
    assert float(trained["rel_delta"]) == pytest.approx(0.2575, abs=1e-3)
    assert trained["paired"] == "true"
    assert float(trained["delta_ci_lo"]) <= 0.202 <= float(trained["delta_ci_hi"])
    assert reward["Qwen3-30B-A3B (untrained)"]["baseline"] == "true"
