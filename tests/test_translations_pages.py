"""Every page in the reader's language: the browser's Accept-Language picks
English or French, the switcher (a plain form posting to set_language)
overrides it, <html lang> follows; the API stays English and a file's bytes
carry no language. The emails are in test_translations_emails.py."""

import re
from datetime import UTC, datetime, timedelta

import pytest
from django.test import Client
from django.urls import reverse
from django.utils import timezone
from freezegun import freeze_time

from collect.models import UploadRequest
from sharing.models import Share

pytestmark = pytest.mark.django_db

BROWSER = "text/html,application/xhtml+xml,*/*;q=0.8"
FRENCH = "fr-FR,fr;q=0.9,en;q=0.5"
ENGLISH = "en-GB,en;q=0.9"
T0 = datetime(2026, 11, 22, 14, 3, tzinfo=UTC)


def share_of(stored, seconds=3600, **options) -> Share:
    return Share.create_for(file=stored, expires_at=timezone.now() + timedelta(seconds=seconds), **options)


def get(client: Client, path: str, language: str, **headers):
    return client.get(path, HTTP_ACCEPT=BROWSER, HTTP_ACCEPT_LANGUAGE=language, **headers)


def assert_in_language(response, language: str, says: list[str], not_says: list[str]) -> str:
    text = response.content.decode()
    assert f'<html lang="{language}" ' in text  # then the theme (pages/themes.py)
    for expected in says:
        assert expected in text, expected
    for unexpected in not_says:
        assert unexpected not in text, unexpected
    assert response["Content-Language"] == language
    assert "Accept-Language" in response["Vary"]
    return text


# (path, French, English): the page's own words, its form's and its pieces'.
OWNER_PAGES = [
    (
        "/",
        ["Vos fichiers et vos liens", "Envoyer des fichiers", "Liens actifs"],
        ["Your files and links", "Live links"],
    ),
    (
        "/files/{file}/share/",
        ["Partager report.txt", "Limite de téléchargements", "Créer le lien"],
        ["Share report.txt", "Download limit", "Create link"],
    ),
    (
        "/shares/{share}/",
        ["Lien vers report.txt", "Prolonger ou raccourcir", "Historique"],
        ["Link to report.txt", "Extend or shorten", "History"],
    ),
    (
        "/files/{file}/delete/",
        ["Cela met fin à 1 lien actif.", "Supprimer le fichier"],
        ["This ends 1 live link.", "Delete the file"],
    ),
    ("/requests/", ["Demander des fichiers", "Créer la demande"], ["Ask for files", "Create the request"]),
    ("/account/password/", ["Changer de mot de passe"], ["Change password"]),
    ("/account/password/done/", ["Votre mot de passe a été changé."], ["Your password has been changed."]),
    ("/account/token/", ["Vous n’avez pas de jeton d’API."], ["You have no API token."]),
]


@pytest.mark.parametrize(("path", "french", "english"), OWNER_PAGES)
def test_every_owner_page_speaks_the_browsers_language(alice_web, shared_file, path, french, english):
    path = path.format(file=shared_file.pk, share=share_of(shared_file).pk)
    french_page = get(alice_web, path, FRENCH)
    assert french_page.status_code == 200
    assert_in_language(french_page, "fr", french, english)
    assert_in_language(get(alice_web, path, ENGLISH), "en", english, french)


def test_the_log_in_page_and_its_refusals_speak_french(client, alice):
    text = assert_in_language(
        get(client, "/login/", FRENCH), "fr", ["Partagez des fichiers par des liens", "Se connecter"], ["Log in"]
    )
    assert "Nom d’utilisateur" in text  # Django's own form, in Django's own French
    refused = client.post("/login/", {"username": "alice", "password": "wrong"}, HTTP_ACCEPT_LANGUAGE=FRENCH)
    assert "Saisissez un nom d’utilisateur et un mot de passe valides" in refused.content.decode()


def test_a_throttled_log_in_says_how_long_to_wait_in_french(client, alice, settings):
    settings.LOGIN_FAILURES_PER_USERNAME = 1
    client.post("/login/", {"username": "alice", "password": "wrong"})
    refused = client.post("/login/", {"username": "alice", "password": "wrong"}, HTTP_ACCEPT_LANGUAGE=FRENCH)
    assert refused.status_code == 429
    assert re.search(r"Trop de tentatives de connexion\. Réessayez dans \d+ minutes\.", refused.content.decode())


def test_messages_and_form_errors_are_french(alice_web, shared_file):
    share = share_of(shared_file)
    answer = alice_web.post(f"/shares/{share.pk}/unshare/", HTTP_ACCEPT_LANGUAGE=FRENCH, follow=True)
    assert "Le partage du lien est arrêté\u00a0; il ne fonctionne plus." in answer.content.decode()
    refused = alice_web.post(
        f"/files/{shared_file.pk}/share/", {"lifetime": "custom", "expires_local": ""}, HTTP_ACCEPT_LANGUAGE=FRENCH
    )
    assert refused.status_code == 400
    assert "Choisissez la date et l’heure auxquelles le lien doit prendre fin." in refused.content.decode()


def test_the_link_page_speaks_the_browsers_language(alice, shared_file):
    share = share_of(shared_file, max_downloads=3)
    path = reverse("public-share", args=[share.token])
    text = assert_in_language(
        get(Client(), path, FRENCH),
        "fr",
        ["Partagé avec vous par alice.", "Temps restant", "Téléchargements restants", ">Télécharger</a>"],
        ["Shared with you by", "Time left"],
    )
    assert 'data-expired-text="expiré"' in text  # the words the page's script shows
    assert 'data-ended-text="Ce lien a expiré."' in text
    assert_in_language(get(Client(), path, ENGLISH), "en", ["Shared with you by alice.", "Time left"], ["Temps"])
    # A browser that asks for a language we do not speak gets LANGUAGE_CODE's.
    assert_in_language(get(Client(), path, "de-DE,de;q=0.9"), "en", ["Time left"], ["Temps restant"])


def test_the_password_prompt_and_a_wrong_password_in_french(alice, shared_file):
    share = share_of(shared_file, password="open sesame")
    path = reverse("public-share", args=[share.token])
    assert_in_language(
        get(Client(), path, FRENCH), "fr", ["Ce lien est protégé par un mot de passe", "Déverrouiller"], ["Unlock"]
    )
    wrong = Client().post(path, {"password": "no"}, HTTP_ACCEPT=BROWSER, HTTP_ACCEPT_LANGUAGE=FRENCH)
    assert wrong.status_code == 403
    assert_in_language(wrong, "fr", ["Mot de passe incorrect. Réessayez."], ["Wrong password"])


def test_an_ended_link_says_what_happened_in_french(shared_file):
    with freeze_time(T0 - timedelta(hours=1)) as frozen:
        share = Share.create_for(file=shared_file, expires_at=T0)
        frozen.move_to(T0 + timedelta(minutes=5))
        french = get(Client(), reverse("public-share", args=[share.token]), FRENCH)
        english = get(Client(), reverse("public-share", args=[share.token]), ENGLISH)
    assert french.status_code == english.status_code == 410
    assert_in_language(
        french,
        "fr",
        [
            "<h1>Ce lien a expiré.</h1>",
            'Il a cessé de fonctionner le <time class="local-time" datetime="2026-11-22T14:03:00+00:00">'
            "22 Nov 2026 à 14:03 UTC</time>.",
            "demandez un nouveau lien à la personne qui vous l’a envoyé",
        ],
        ["stopped working"],
    )
    assert_in_language(english, "en", ["22 Nov 2026 at 14:03 UTC</time>."], ["cessé"])


def test_unknown_links_and_pages_are_french_404s(db):
    unknown_link = get(Client(), reverse("public-share", args=["no-such-token"]), FRENCH)
    assert unknown_link.status_code == 404
    assert_in_language(unknown_link, "fr", ["Vérifiez que l’adresse a été copiée en entier."], ["Check that"])
    page = get(Client(), "/no/such/page/", FRENCH)
    assert page.status_code == 404
    assert_in_language(page, "fr", ["<h1>Page introuvable</h1>", "Aller à la page d’accueil"], ["Page not found"])


def test_the_500_page_speaks_the_language_of_the_failed_request():
    from django.template.loader import get_template
    from django.utils import translation

    with translation.override("fr"):
        page = get_template("500.html").render({})
    assert '<html lang="fr">' in page
    assert "<h1>Une erreur est survenue</h1>" in page


# --- the switcher --------------------------------------------------------------


@pytest.mark.parametrize("path", ["/login/", "/no/such/page/", "link"])
def test_every_page_has_the_switcher_pointing_back_to_itself(alice, shared_file, path):
    if path == "link":
        path = reverse("public-share", args=[share_of(shared_file).token])
    text = get(Client(), path, ENGLISH).content.decode()
    assert f'<form class="language-form" method="post" action="{reverse("set_language")}">' in text
    assert '<label for="language-choice">Language</label>' in text
    assert f'<input type="hidden" name="next" value="{path}">' in text
    assert '<option value="fr" lang="fr">Français</option>' in text
    assert '<option value="en" lang="en" selected>English</option>' in text


def test_the_switcher_sets_the_language_without_javascript(alice, shared_file):
    """As a browser without scripts does it: read the form's CSRF token, post
    the form, follow the redirect back; the choice then outranks Accept-Language."""
    client = Client(enforce_csrf_checks=True)
    path = reverse("public-share", args=[share_of(shared_file).token])
    assert_in_language(get(client, path, ENGLISH), "en", ["Time left"], [])
    token = client.cookies["csrftoken"].value
    answer = client.post(
        reverse("set_language"),
        {"csrfmiddlewaretoken": token, "language": "fr", "next": path},
        HTTP_ACCEPT=BROWSER,
        HTTP_ACCEPT_LANGUAGE=ENGLISH,
    )
    assert answer.status_code == 302
    assert answer["Location"] == path
    assert_in_language(get(client, path, ENGLISH), "fr", ["Temps restant"], ["Time left"])
    assert '<option value="fr" lang="fr" selected>Français</option>' in get(client, path, ENGLISH).content.decode()
    client.post(reverse("set_language"), {"csrfmiddlewaretoken": token, "language": "en", "next": "/login/"})
    assert_in_language(get(client, "/login/", FRENCH), "en", ["Log in"], ["Se connecter"])


def test_the_switcher_goes_nowhere_off_site(db):
    answer = Client().post(reverse("set_language"), {"language": "fr", "next": "https://elsewhere.example/"})
    assert answer.status_code == 302
    assert answer["Location"] == "/"


def test_a_page_that_answered_a_post_sends_the_switcher_back_by_the_referer(alice_web, shared_file):
    """The expiry form's address takes POSTs only: the switcher on the page
    it answers names no `next`, and set_language goes back by the Referer."""
    share = share_of(shared_file)
    refused = alice_web.post(f"/shares/{share.pk}/expiry/", {"lifetime": "custom"}, HTTP_ACCEPT_LANGUAGE=FRENCH)
    assert refused.status_code == 400
    assert 'name="next"' not in refused.content.decode().split('class="language-form"')[1].split("</form>")[0]
    back = alice_web.post(reverse("set_language"), {"language": "fr"}, HTTP_REFERER=f"/shares/{share.pk}/")
    assert back["Location"] == f"/shares/{share.pk}/"


def test_the_link_pages_policy_lets_the_switcher_post(alice, shared_file):
    response = get(Client(), reverse("public-share", args=[share_of(shared_file).token]), FRENCH)
    assert "form-action 'self'" in response["Content-Security-Policy"]


# --- what stays out of it ---------------------------------------------------------


def test_the_api_answers_in_english_whatever_the_client_asks(client, db):
    answer = client.get("/api/shares/", HTTP_ACCEPT_LANGUAGE=FRENCH)
    assert answer.status_code in (401, 403)
    assert answer.json()["detail"] == "Authentication credentials were not provided."
    assert "Content-Language" not in answer
    assert "Accept-Language" not in answer.get("Vary", "")


def test_a_files_bytes_carry_no_language(alice, shared_file):
    share = share_of(shared_file)
    response = Client().get(reverse("public-download", args=[share.token]), HTTP_ACCEPT_LANGUAGE=FRENCH)
    assert response.status_code == 200
    assert b"".join(response.streaming_content) == b"hello, world\n"
    assert "Content-Language" not in response
    assert "Accept-Language" not in response.get("Vary", "")


def test_a_refusal_for_scripts_is_in_their_language(alice, shared_file):
    share = share_of(shared_file)
    share.unshare()
    plain = Client().get(reverse("public-share", args=[share.token]), HTTP_ACCEPT_LANGUAGE="fr")
    assert plain.status_code == 410
    assert plain.content.decode() == "Le partage de ce lien a été arrêté.\n"
    assert Client().get(reverse("public-share", args=[share.token])).content.decode() == (
        "This link has been unshared.\n"
    )


def test_an_upload_requests_pages_speak_the_uploaders_language(alice):
    asking = UploadRequest.create_for(owner=alice, expires_at=timezone.now() + timedelta(hours=1), max_files=2)
    page = f"/r/{asking.token}/"
    assert_in_language(
        get(Client(), page, FRENCH),
        "fr",
        ["alice vous demande des fichiers.", "Fichiers encore acceptés"],
        ["asks you"],
    )
    locked = UploadRequest.create_for(owner=alice, expires_at=timezone.now() + timedelta(hours=1), password="pw")
    wrong = Client().post(f"/r/{locked.token}/", {"password": "no"}, HTTP_ACCEPT_LANGUAGE=FRENCH)
    assert wrong.status_code == 403
    assert_in_language(wrong, "fr", ["protégée par un mot de passe", "Mot de passe incorrect"], ["Wrong password"])
    UploadRequest.objects.filter(pk=asking.pk).update(expires_at=timezone.now())
    ended = get(Client(), page, FRENCH)
    assert ended.status_code == 410
    assert_in_language(ended, "fr", ["Cette demande de fichiers a pris fin"], ["has ended"])
