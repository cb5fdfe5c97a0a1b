from __future__ import annotations

from django.urls import path

from deeprepo_web.sso import views

# The names are mozilla-django-oidc's: it reverses the callback by name to build the redirect_uri.
urlpatterns = [
    path("oidc/authenticate/", views.SsoStartView.as_view(), name="oidc_authentication_init"),
    path("oidc/callback/", views.SsoCallbackView.as_view(), name="oidc_authentication_callback"),
]
