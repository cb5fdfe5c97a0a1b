from __future__ import annotations

from django.apps import AppConfig


class SearchConfig(AppConfig):
    name = "deeprepo_web.search"
    label = "search"

    def ready(self) -> None:
        from deeprepo_web.search import signals  # noqa: F401  (connects the receivers)
