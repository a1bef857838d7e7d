from django.urls import path

from signin import views

app_name = "signin"

urlpatterns = [
    path("login/code/", views.CodeView.as_view(), name="code"),
    path("account/second-factor/", views.SetUpView.as_view(), name="set-up"),
]
