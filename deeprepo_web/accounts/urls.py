from __future__ import annotations

from django.urls import path

from deeprepo_web.accounts import views

urlpatterns = [
    path("p/<slug:slug>/settings/", views.project_settings, name="project_settings"),
    path("p/<slug:slug>/settings/keys/", views.key_create, name="key_create"),
    path("p/<slug:slug>/settings/keys/<int:key_id>/revoke/", views.key_revoke, name="key_revoke"),
    path("p/<slug:slug>/settings/members/", views.member_set, name="member_set"),
    path("p/<slug:slug>/settings/members/<int:membership_id>/remove/", views.member_remove, name="member_remove"),
]
