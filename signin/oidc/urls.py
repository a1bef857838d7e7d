from django.urls import path

from signin.oidc import views

app_name = "signin-oidc"

urlpatterns = [
    path("start/", views.StartView.as_view(), name="start"),
    path("callback/", views.CallbackView.as_view(), name="callback"),
]
