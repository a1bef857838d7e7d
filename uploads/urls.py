"""The tus endpoints, mounted under /api/ by microcloud.urls. An upload's URL
has no trailing slash, as tus clients build none; one is accepted."""

from django.urls import path, re_path

from uploads.endpoints import UploadCollectionView, UploadView
from uploads.models import ID_PATTERN

api_urlpatterns = [
    path("uploads/", UploadCollectionView.as_view(), name="tus-uploads"),
    re_path(rf"^uploads/(?P<upload_id>{ID_PATTERN})/?$", UploadView.as_view(), name="tus-upload"),
]
