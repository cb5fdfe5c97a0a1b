"""The sweep page's server-drawn charts, from unsaved rows: what a reader can tell apart."""

from __future__ import annotations

import re
from datetime import timedelta

from django.utils import timezone

from deeprepo_web.sweeps.charts import best_so_far, parallel_coordinates
from deeprepo_web.sweeps.models import Sweep, Trial, TrialStatus


def test_every_trial_a_new_best_still_shows_each_trial() -> None:
    """Rising values: the best line goes through every trial. Each trial is a dot drawn after (on
    top of) the best's step line, so none hides under it."""
    start = timezone.now()
    sweep = Sweep(metric="reward", direction="maximize")
    trials = [Trial(number=i, value=v, created_at=start, finished_at=start + timedelta(minutes=i + 1))
              for i, v in enumerate([0.2, 0.5, 0.7])]
    svg = str(best_so_far(sweep, trials)).split("</svg>", 1)[0]
    paths = re.findall(r'<path d="([^"]*)"', svg)
    assert len(paths) == 1 and paths[0].count("H") == 2  # held, then up, at each new best
    dots = svg.split('<g class="dots"', 1)[1]
    assert svg.index("<path ") < svg.index('<g class="dots"') and dots.count("<circle ") == 3
    # The dots sit where the step line turns: the same points, not a line of their own.
    corners = re.findall(r"L([\d.]+),([\d.]+)", paths[0])
    centres = re.findall(r'<circle cx="([\d.]+)" cy="([\d.]+)"', dots)
    assert corners == centres[1:]


def test_parallel_coordinates_labels_the_axis_ends_outside_the_lines() -> None:
    sweep = Sweep(metric="reward", direction="maximize",
                  space={"lr": {"low": 0.001, "high": 1.0, "log": True}, "seed": {"values": [0, 1, 2]}})
    trials = [Trial(number=i, status=TrialStatus.COMPLETE, value=v, params={"lr": lr, "seed": s})
              for i, (v, lr, s) in enumerate([(0.8, 1.0, 1), (0.1, 0.001, 0), (0.5, 0.03, 2)])]
    svg = str(parallel_coordinates(sweep, trials)).split("</svg>", 1)[0]
    top, bottom = (float(v) for v in re.search(r'<line class="axis" [^>]*y1="([\d.]+)" y2="([\d.]+)"', svg).groups())
    ends = [(float(y), t) for y, t in re.findall(r'<text class="tick" x="[\d.]+" y="([\d.]+)"[^>]*>([^<]*)</text>', svg)]
    assert {t for _, t in ends} == {"0.001", "1", "0", "2", "0.1", "0.8"}
    # Above the top (the text's baseline a few pixels over it) or a whole line of text below the bottom.
    assert all(y <= top - 6 or y >= bottom + 12 for y, _ in ends), (top, bottom, ends)
    inner = re.findall(r'<text class="tick inner" [^>]*>([^<]*)</text>', svg)
    assert inner == ["1"] and svg.rindex('class="trial-line"') < svg.index('class="tick inner"')
