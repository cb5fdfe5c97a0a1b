from __future__ import annotations

from django.urls import path

from deeprepo_web.artifacts import views

urlpatterns = [
    path("p/<slug:slug>/runs/<str:run_id>/artifacts/", views.artifact_list, name="artifacts"),
    path("p/<slug:slug>/runs/<str:run_id>/artifacts/<int:artifact_id>/download/", views.artifact_download,
         name="artifact_download"),
    path("p/<slug:slug>/runs/<str:run_id>/artifacts/<int:artifact_id>/delete/", views.artifact_delete,
         name="artifact_delete"),
    path("p/<slug:slug>/blobs/<str:sha>/", views.blob, name="blob"),
    path("storage/put/<str:token>/", views.storage_put, name="storage_put"),
    path("storage/get/<str:token>/", views.storage_get, name="storage_get"),
]
