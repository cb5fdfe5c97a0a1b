from __future__ import annotations

from django.apps import AppConfig


class SharingConfig(AppConfig):
    name = "deeprepo_web.sharing"
    label = "sharing"
