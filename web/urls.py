from django.urls import path

from web.views import auth, dashboard, encrypted, files, requests, shares, tokens

app_name = "web"

urlpatterns = [
    path("", dashboard.DashboardView.as_view(), name="dashboard"),
    path("login/", auth.LoginView.as_view(), name="login"),
    path("logout/", auth.LogoutView.as_view(), name="logout"),
    path("account/password/", auth.PasswordChangeView.as_view(), name="password-change"),
    path("account/password/done/", auth.PasswordChangeDoneView.as_view(), name="password-change-done"),
    path("account/token/", tokens.TokenView.as_view(), name="token"),
    path("files/", files.UploadView.as_view(), name="upload"),
    path("files/<int:pk>/delete/", files.FileDeleteView.as_view(), name="file-delete"),
    path("files/<int:pk>/share/", shares.ShareCreateView.as_view(), name="share-create"),
    path("files/share/", shares.ShareCreateView.as_view(), name="share-several"),
    path("files/encrypted/", encrypted.EncryptedShareView.as_view(), name="share-encrypted"),
    path("requests/", requests.RequestsView.as_view(), name="requests"),
    path("requests/places/", requests.RequestPlacesView.as_view(), name="request-places"),
    path("requests/<int:pk>/close/", requests.RequestCloseView.as_view(), name="request-close"),
    path("requests/<int:pk>/delete/", requests.RequestDeleteView.as_view(), name="request-delete"),
    path("shares/live/", dashboard.LiveSharesView.as_view(), name="shares-live"),
    path("shares/<int:pk>/", shares.ShareDetailView.as_view(), name="share"),
    path("shares/<int:pk>/expiry/", shares.ShareExpiryView.as_view(), name="share-expiry"),
    path("shares/<int:pk>/unshare/", shares.UnshareView.as_view(), name="unshare"),
    path("shares/<int:pk>/reactivate/", shares.ReactivateView.as_view(), name="share-reactivate"),
]
