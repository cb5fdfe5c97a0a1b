from __future__ import annotations

from django.contrib.auth import views as auth_views
from django.urls import include, path

from deeprepo_web.front import views

# Each area keeps its own URL module; add one include line here.
urlpatterns = [
    path("login/", auth_views.LoginView.as_view(template_name="front/login.html"), name="login"),
    path("logout/", auth_views.LogoutView.as_view(), name="logout"),
    path("", views.home, name="home"),
    path("p/<slug:slug>/", views.project, name="project"),
    path("p/<slug:slug>/runs/<str:run_id>/", views.run_detail, name="run"),
    path("r/<str:run_id>/", views.run_redirect, name="run_short"),
    path("", include("deeprepo_web.jobs.urls")),
]
