from __future__ import annotations

from django.apps import AppConfig


class AccountsConfig(AppConfig):
    name = "deeprepo_web.accounts"
    label = "accounts"
