from __future__ import annotations

from django.apps import AppConfig


class SearchConfig(AppConfig):
    name = "deeprepo_web.search"
    label = "search"
