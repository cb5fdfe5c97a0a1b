from __future__ import annotations

from django.urls import path

from deeprepo_web.judge import views

urlpatterns = [
    path("p/<slug:slug>/judge/", views.judge, name="judge"),
    path("p/<slug:slug>/judge/new/", views.judge_new, name="judge_new"),
    path("p/<slug:slug>/judge/<str:judge_id>/", views.judge_job, name="judge_job"),
    path("p/<slug:slug>/judge/<str:judge_id>/cancel/", views.judge_cancel, name="judge_cancel"),
    path("p/<slug:slug>/judge/<str:judge_id>/resume/", views.judge_resume, name="judge_resume"),
]
