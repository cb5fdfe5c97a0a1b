"""`manage.py import PATH --project P [--format F]`: one line per run created or updated, then problems."""

from __future__ import annotations

from typing import Any

from django.core.management.base import BaseCommand, CommandError, CommandParser

from deeprepo_client.formats import format_choices
from deeprepo_web.accounts.models import Project
from deeprepo_web.importers.jobs import import_job_run_in_place
from deeprepo_web.importers.pipeline import import_events
from deeprepo_web.importers.report import ImportReport


def report_lines(report: ImportReport) -> list[str]:
    lines = []
    for r in report.runs:
        verb = "created" if r.created else "updated"
        detail = f"{r.rollouts} rollouts, {r.points} points"
        if r.rollouts_received > r.rollouts:
            detail += f", {r.rollouts_received - r.rollouts} already there"
        if r.media:
            detail += f", {r.media} media files"
        if r.rewards_attached:
            detail += f", rewards on {r.rewards_attached} rollouts"
        lines.append(f"{verb} run {r.name} ({detail}): {r.public_id}")
    return lines


def problem_lines(report: ImportReport) -> list[str]:
    lines = []
    for p in report.problems:
        where = f"{p['file']}:{p['line']}" if p.get("line") is not None else p["file"]
        lines.append(f"{where}: {p['message']}")
    if report.problems_total > len(report.problems):
        lines.append(f"… and {report.problems_total - len(report.problems)} more problems")
    return lines


class Command(BaseCommand):
    help = ("Import a file or folder written by verifiers, prime-rl, TRL, Inspect, SWE-agent, OpenHands, SWE-bench, "
            "W&B (offline runs), MLflow (export folders) or Trackio; or pull mlflow://HOST:PORT --experiment NAME.")

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument("path")
        parser.add_argument("--project", required=True, help="project slug")
        parser.add_argument("--format", dest="fmt", choices=format_choices(),
                            help="skip detection and read the input as this format")
        parser.add_argument("--experiment", help="with an mlflow://HOST:PORT (or http URL) PATH: the experiment to pull")

    def handle(self, *args: Any, **options: Any) -> None:
        project = Project.objects.filter(slug=options["project"]).first()
        if project is None:
            raise CommandError(f"--project: no project with slug {options['project']!r}")
        path = options["path"]
        if path.startswith(("mlflow://", "http://", "https://")):
            if not options["experiment"]:
                raise CommandError("--experiment: required to pull from an MLflow tracking server")
            from deeprepo_client.formats.mlflow_server import pull

            report = import_events(project=project, events=pull(path, options["experiment"]),
                                   label=f"{path} experiment {options['experiment']}", fmt="mlflow_server")
        else:
            # Recorded as an import job: the import page lists it beside uploads.
            _, report = import_job_run_in_place(project=project, path=path, fmt=options["fmt"])
        for line in report_lines(report):
            self.stdout.write(line)
        problems = problem_lines(report)
        if problems:
            self.stderr.write(f"{report.problems_total} problem(s):")
            for line in problems:
                self.stderr.write(f"  {line}")
        if not report.imported_anything:
            raise CommandError("nothing was imported", returncode=1)
