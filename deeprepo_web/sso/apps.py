from __future__ import annotations

from django.apps import AppConfig


class SsoConfig(AppConfig):
    name = "deeprepo_web.sso"
    label = "sso"
