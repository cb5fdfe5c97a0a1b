from __future__ import annotations

from django.urls import path

from deeprepo_web.importers import views

urlpatterns = [
    path("p/<slug:slug>/import/", views.import_page, name="import"),
    path("p/<slug:slug>/import/<int:import_id>/", views.import_job, name="import_job"),
]
