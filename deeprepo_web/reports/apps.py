from __future__ import annotations

from django.apps import AppConfig


class ReportsConfig(AppConfig):
    name = "deeprepo_web.reports"
    label = "reports"
