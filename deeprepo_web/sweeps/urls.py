from __future__ import annotations

from django.urls import path

from deeprepo_web.sweeps import views

urlpatterns = [
    path("p/<slug:slug>/sweeps/", views.sweep_list, name="sweeps"),
    path("p/<slug:slug>/sweeps/new/<slug:template_slug>/", views.sweep_new, name="sweep_new"),
    path("p/<slug:slug>/sweeps/<str:sweep_id>/", views.sweep_detail, name="sweep"),
    path("p/<slug:slug>/sweeps/<str:sweep_id>/cancel/", views.sweep_cancel, name="sweep_cancel"),
]
