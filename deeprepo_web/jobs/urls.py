from __future__ import annotations

from django.urls import path

from deeprepo_web.jobs import views

urlpatterns = [
    path("p/<slug:slug>/jobs/", views.job_list, name="jobs"),
    path("p/<slug:slug>/jobs/new/<slug:template_slug>/", views.job_launch, name="job_launch"),
    path("p/<slug:slug>/jobs/templates/new/", views.template_edit, name="job_template_new"),
    path("p/<slug:slug>/jobs/templates/<int:template_id>/", views.template_edit, name="job_template_edit"),
    path("p/<slug:slug>/jobs/<str:job_id>/", views.job_detail, name="job"),
    path("p/<slug:slug>/jobs/<str:job_id>/cancel/", views.job_cancel, name="job_cancel"),
    path("p/<slug:slug>/clusters/", views.cluster_list, name="clusters"),
    path("p/<slug:slug>/clusters/new/", views.cluster_edit, name="cluster_new"),
    path("p/<slug:slug>/clusters/<int:cluster_id>/", views.cluster_edit, name="cluster_edit"),
    path("p/<slug:slug>/clusters/<int:cluster_id>/test/", views.cluster_test, name="cluster_test"),
]
