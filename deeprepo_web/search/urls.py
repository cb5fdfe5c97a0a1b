from __future__ import annotations

from django.urls import path

from deeprepo_web.search import views

urlpatterns = [
    path("p/<slug:slug>/search/", views.search, name="search"),
    path("p/<slug:slug>/search/counts/", views.counts, name="search_counts"),
    path("p/<slug:slug>/search/label/", views.bulk_label, name="search_label"),
    path("p/<slug:slug>/runs/<str:run_id>/search/", views.run_search, name="run_search"),
]
urlpatterns.append(path("p/<slug:slug>/search/export.<str:fmt>", views.export, name="search_export"))
urlpatterns.append(path("p/<slug:slug>/runs/<str:run_id>/errors/", views.run_errors, name="run_errors"))
