"""API routes (mounted under /api/); the public link lives in links.urls."""

from rest_framework.routers import DefaultRouter

from sharing import views

router = DefaultRouter()
router.register("files", views.FileViewSet, basename="file")
router.register("shares", views.ShareViewSet, basename="share")

api_urlpatterns = router.urls
