"""Routes of upload requests: the owner's API (mounted under /api/ by
microcloud.urls) and the uploader's page and tus endpoints (at the root)."""

from django.urls import re_path
from rest_framework.routers import SimpleRouter

from collect.models import TOKEN_PATTERN
from collect.pages import RequestPage
from collect.tus import RequestUploadCollectionView, RequestUploadView
from collect.views import UploadRequestViewSet
from uploads.models import ID_PATTERN

router = SimpleRouter()
router.register("upload-requests", UploadRequestViewSet, basename="upload-request")

api_urlpatterns = router.urls

app_name = "collect"
urlpatterns = [
    re_path(rf"^r/(?P<token>{TOKEN_PATTERN})/$", RequestPage.as_view(), name="page"),
    re_path(rf"^r/(?P<token>{TOKEN_PATTERN})/uploads/$", RequestUploadCollectionView.as_view(), name="tus-uploads"),
    re_path(
        rf"^r/(?P<token>{TOKEN_PATTERN})/uploads/(?P<upload_id>{ID_PATTERN})/?$",
        RequestUploadView.as_view(),
        name="tus-upload",
    ),
]
