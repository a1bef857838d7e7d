"""API routes of the webhooks app (mounted under /api/ by microcloud.urls)."""

from rest_framework.routers import SimpleRouter

from webhooks.views import WebhookEndpointViewSet

router = SimpleRouter()
router.register("webhooks", WebhookEndpointViewSet, basename="webhook")

api_urlpatterns = router.urls
