"""`manage.py compare RUN RUN … [--baseline RUN] --format markdown|csv`: the compare page's table."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from deeprepo_web.compare.comparison import comparison_build
from deeprepo_web.compare.exports import comparison_csv, comparison_markdown
from deeprepo_web.compare.options import CompareError, options_for, runs_select
from deeprepo_web.runs.models import Run


class Command(BaseCommand):
    help = "Print the before/after table of 2-10 runs (public id or exact name) as Markdown or CSV."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("runs", nargs="+", help="run public ids or exact names")
        parser.add_argument("--baseline", default="", help="the run the others are compared to (default: first)")
        parser.add_argument("--format", choices=["markdown", "csv"], default="markdown")
        parser.add_argument("--zero", default="", help="zero-X rate: tool:NAME[+NAME] or metric:NAME")
        parser.add_argument("--pass-threshold", type=float, default=1.0, help="reward that counts as a pass")
        parser.add_argument("--effects", default="", help="A>B:label;B>C:label …")
        parser.add_argument("--title", default="Before / after")

    def handle(self, *args: Any, **opts: Any) -> None:
        ids: list[str] = opts["runs"]
        first = self._find(ids[0])
        try:
            runs = runs_select(project=first.project, ids=[first.public_id] + ids[1:])
            baseline = 0
            if opts["baseline"]:
                base = self._find(opts["baseline"])
                if base.pk not in [r.pk for r in runs]:
                    raise CompareError("baseline: not one of the compared runs")
                baseline = [r.pk for r in runs].index(base.pk)
            c = comparison_build(runs=runs, options=options_for(
                runs, baseline=baseline, zero=opts["zero"], pass_threshold=opts["pass_threshold"],
                effects=opts["effects"]))
        except CompareError as exc:
            raise CommandError(str(exc)) from None
        if opts["format"] == "csv":
            self.stdout.write(comparison_csv(c), ending="")
        else:
            self.stdout.write(comparison_markdown(c, title=opts["title"]))

    def _find(self, ident: str) -> Run:
        run = Run.objects.select_related("project").filter(public_id=ident).first()
        if run is not None:
            return run
        named = list(Run.objects.select_related("project").filter(name=ident)[:2])
        if not named:
            raise CommandError(f"no run with id or name {ident!r}")
        if len(named) > 1:
            raise CommandError(f"several runs are named {ident!r}; use the public id")
        return named[0]
