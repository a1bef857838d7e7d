"""API routes (mounted under /api/ by microcloud.urls): files and shares,
and the owner's upload requests. The public link lives in links.urls, an
upload request's page and tus endpoints in collect.urls."""

from rest_framework.routers import DefaultRouter, SimpleRouter

from api import views
from api.upload_requests import UploadRequestViewSet

router = DefaultRouter()
router.register("files", views.FileViewSet, basename="file")
router.register("shares", views.ShareViewSet, basename="share")

api_urlpatterns = router.urls

request_router = SimpleRouter()
request_router.register("upload-requests", UploadRequestViewSet, basename="upload-request")

request_urlpatterns = request_router.urls
