"""The public link: /s/<token> (page or the share), /s/<token>/download (the
share), /s/<token>/files/<n> (its n-th file), /s/<token>/all.zip (all of
them), /s/<token>/sealed (an encrypted link's sealed metadata), /s/<token>/key
(how to derive its password's key), /s/<token>/receive.js (the service worker
that decrypts its files), /s/<token>/decrypted/<n> (the worker's; the server
only says how to get there)."""

from django.urls import re_path

from links import views

# Tokens are URL-safe base64 (secrets.token_urlsafe); anything else cannot be
# a token, so it is a plain 404 without a database query.
TOKEN = r"(?P<token>[A-Za-z0-9_-]{1,64})"

urlpatterns = [
    re_path(rf"^s/{TOKEN}$", views.link, name="public-share"),
    re_path(rf"^s/{TOKEN}/download$", views.download, name="public-download"),
    re_path(rf"^s/{TOKEN}/files/(?P<position>[1-9][0-9]{{0,5}})$", views.file_download, name="public-file"),
    re_path(rf"^s/{TOKEN}/files/(?P<position>[1-9][0-9]{{0,5}})/preview$", views.file_preview, name="public-preview"),
    re_path(rf"^s/{TOKEN}/all\.zip$", views.archive, name="public-archive"),
    re_path(rf"^s/{TOKEN}/sealed$", views.sealed, name="public-sealed"),
    re_path(rf"^s/{TOKEN}/receive\.js$", views.receive_worker, name="public-receive-worker"),
    re_path(rf"^s/{TOKEN}/decrypted/(?P<position>[1-9][0-9]{{0,5}})$", views.decrypted, name="public-decrypted"),
    re_path(rf"^s/{TOKEN}/key$", views.key, name="public-key"),
]
