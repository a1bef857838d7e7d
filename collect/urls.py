"""Routes of an upload request for the person holding its link: its page
and tus endpoints (at the root). The owner's API is in api.urls."""

from django.urls import re_path

from collect.models import TOKEN_PATTERN
from collect.pages import RequestPage
from collect.tus import RequestUploadCollectionView, RequestUploadView
from uploads.models import ID_PATTERN

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
