"""API routes (mounted under /api/) and the public link route."""

from django.urls import re_path
from rest_framework.routers import DefaultRouter

from sharing import public, views

router = DefaultRouter()
router.register("files", views.FileViewSet, basename="file")
router.register("shares", views.ShareViewSet, basename="share")

api_urlpatterns = router.urls

# Tokens are URL-safe base64 (secrets.token_urlsafe); anything else cannot be
# a token, so it is a plain 404 without a database query.
public_urlpatterns = [
    re_path(r"^s/(?P<token>[A-Za-z0-9_-]{1,64})$", public.download, name="public-share"),
]
