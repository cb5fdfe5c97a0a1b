from __future__ import annotations

from django.urls import path

from deeprepo_web.retention import views

urlpatterns = [
    path("p/<slug:slug>/settings/retention/", views.retention_set, name="retention_set"),
]
