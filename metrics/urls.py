from django.urls import path

from metrics.views import metrics

urlpatterns = [path("metrics", metrics, name="metrics")]
