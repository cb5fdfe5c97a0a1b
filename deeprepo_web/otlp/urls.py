"""OTLP/HTTP paths at the site root: an SDK appends /v1/traces and /v1/logs to OTEL_EXPORTER_OTLP_ENDPOINT."""

from __future__ import annotations

from django.urls import path

from deeprepo_web.otlp import quiet_views, views

urlpatterns = [
    path("v1/traces", views.traces, name="otlp_traces"),
    path("v1/logs", views.logs, name="otlp_logs"),
    path("p/<slug:slug>/settings/otlp/", quiet_views.otlp_quiet_set, name="otlp_quiet_set"),
]
