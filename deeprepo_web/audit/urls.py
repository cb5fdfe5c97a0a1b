from __future__ import annotations

from django.urls import path

from deeprepo_web.audit import views

urlpatterns = [
    path("p/<slug:slug>/settings/audit/", views.audit_log, name="audit_log"),
]
