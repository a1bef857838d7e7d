"""Sharing files encrypted in the owner's browser (docs/encryption.md,
"Sending from the browser"). The server renders the page and nothing more:
the browser encrypts each file as it reads it, sends the ciphertext through
the tus endpoint and makes the link through the API, as any client does, so
no name, byte of plaintext or key reaches the server."""

from django.conf import settings
from django.contrib.auth.mixins import LoginRequiredMixin
from django.urls import reverse
from django.views.generic import TemplateView

from pages.security import PageHeadersMixin
from sharing.models import MAX_FILES_PER_SHARE
from uploads.writing import page_chunk
from web.forms import ShareForm


class EncryptedShareView(LoginRequiredMixin, PageHeadersMixin, TemplateView):
    template_name = "web/share_encrypted.html"

    def get_context_data(self, **kwargs):
        return super().get_context_data(
            form=ShareForm(),
            max_upload_bytes=settings.MAX_UPLOAD_BYTES,
            max_files=MAX_FILES_PER_SHARE,
            tus_endpoint=reverse("tus-uploads"),
            tus_chunk_bytes=page_chunk(),
            shares_endpoint=reverse("share-list"),
            **kwargs,
        )
