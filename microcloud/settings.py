"""Settings for the microcloud project.

Everything a deployment changes is read from the environment through the
helpers in microcloud/env.py; the defaults run a development instance on
SQLite with no other server to install. The README lists every variable.
"""

import os
from pathlib import Path

from django.core.exceptions import ImproperlyConfigured

from microcloud.databases import database_from_url
from microcloud.env import envbool, envfloat, envint, envlist, secret_key
from microcloud.oidc_settings import *  # noqa: F403 (OIDC_*, LOCAL_LOGIN)
from microcloud.scan_settings import *  # noqa: F403 (CLAMD_URL, SCAN_*: settings Django reads from here)
from microcloud.signin_local_settings import *  # noqa: F403 (TRUSTED_PROXY_*, TOTP_*, DISABLED_USERS_LINKS)
from storage.url import BUCKET_BACKEND, storage_from_url

BASE_DIR = Path(__file__).resolve().parent.parent

DEBUG = envbool("DEBUG", False)
# SECRET_KEY signs sessions, CSRF tokens and the links' cookies: a known one
# lets anyone forge them. Read it from SECRET_KEY, or from the file named by
# SECRET_KEY_FILE, or from var/secret_key (`make run` writes it on first
# start); only a DEBUG instance may fall back to a development key.
SECRET_KEY = secret_key(DEBUG, default_file=BASE_DIR / "var" / "secret_key")
ALLOWED_HOSTS = envlist("ALLOWED_HOSTS", ["localhost", "127.0.0.1", "[::1]", "testserver"])
CSRF_TRUSTED_ORIGINS = envlist("CSRF_TRUSTED_ORIGINS", [])

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "rest_framework.authtoken",
    # After authtoken, whose token admin its own admin takes down.
    "tokens",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "ratelimit",
    "sharing",
    # Its template filters and static files (the pages' one formatter of sizes and moments).
    "pages",
    "webhooks",
    "links",
    "web",
    "expiry",
    "notices",
    "uploads",
    "collect",
    "scanning",
    "signin",
    "api",
    # Their management commands: backup and restore; prepare (the container's start-up).
    "backups",
    "deploy",
]

MIDDLEWARE = [
    # First: refuse an oversized body before anything (CSRF, sessions) reads it.
    "microcloud.middleware.UploadLimitMiddleware",
    "django.middleware.security.SecurityMiddleware",
    "whitenoise.middleware.WhiteNoiseMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    # The page's language: the switcher's cookie, else the browser's
    # Accept-Language, else LANGUAGE_CODE. After sessions, before
    # CommonMiddleware (which may redirect, in the chosen language).
    "microcloud.languages.PageLanguageMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    # TRUSTED_PROXY_HEADER from TRUSTED_PROXY_ADDRESSES signs a user in (off by default).
    "signin.proxy.TrustedProxyMiddleware",
    # A session whose user may no longer sign in (disabled) ends (signin/).
    "signin.sessions.EndRefusedSessionsMiddleware",
    # A local session owing its second factor reaches only the code page.
    "signin.second_factor.SecondFactorMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
    # Last, so it sees a view's exception first: the file store out of reach.
    "microcloud.middleware.StorageUnavailableMiddleware",
]

ROOT_URLCONF = "microcloud.urls"
WSGI_APPLICATION = "microcloud.wsgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        # The project's own pages: 404.html and 500.html.
        "DIRS": [BASE_DIR / "microcloud" / "templates"],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
                "pages.themes.theme",
            ],
        },
    },
]

# --- Database -------------------------------------------------------------
# SQLite (WAL) is the embedded default; DATABASE_URL selects PostgreSQL.
DEFAULT_SQLITE_PATH = Path(os.environ.get("SQLITE_PATH", BASE_DIR / "var" / "db.sqlite3"))
DATABASE_URL = os.environ.get("DATABASE_URL", f"sqlite:///{DEFAULT_SQLITE_PATH}")
DATABASES = {"default": database_from_url(DATABASE_URL)}
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

AUTH_PASSWORD_VALIDATORS = [
    {"NAME": "django.contrib.auth.password_validation.UserAttributeSimilarityValidator"},
    {"NAME": "django.contrib.auth.password_validation.MinimumLengthValidator"},
    {"NAME": "django.contrib.auth.password_validation.CommonPasswordValidator"},
    {"NAME": "django.contrib.auth.password_validation.NumericPasswordValidator"},
]

# The owner pages (web/): / sends a visitor who is not signed in to the log-in page.
LOGIN_URL = "web:login"
LOGIN_REDIRECT_URL = "web:dashboard"
LOGOUT_REDIRECT_URL = "web:login"
# Local passwords, the OpenID provider's sessions (signin/oidc/backend.py: it
# authenticates nothing by itself), the trusted proxy's header when it is on
# (signin/proxy.py), and an LDAP directory when LDAP_SERVER_URI names one
# (signin/directory.py: only then, as python-ldap is installed only then).
AUTHENTICATION_BACKENDS = [
    "django.contrib.auth.backends.ModelBackend",
    "signin.oidc.backend.OIDCBackend",
    "signin.proxy.TrustedProxyBackend",
]
if LDAP_SERVER_URI:  # noqa: F405 (microcloud/signin_local_settings.py)
    AUTHENTICATION_BACKENDS.insert(1, "signin.directory.DirectoryBackend")

# --- Languages --------------------------------------------------------------
# The pages and emails speak these (docs/translations.md adds one). Each name
# is written in its own language, as a reader looks for it in the switcher.
LANGUAGES = [("en", "English"), ("fr", "Français")]
# The language of pages whose reader's browser asks for none we speak, and of
# the email notices, which the daemon sends with no reader to ask.
LANGUAGE_CODE = os.environ.get("LANGUAGE_CODE", "en").strip().lower() or "en"
if LANGUAGE_CODE not in dict(LANGUAGES):
    raise ImproperlyConfigured(f"LANGUAGE_CODE must be one of {', '.join(dict(LANGUAGES))}, got {LANGUAGE_CODE!r}")
# One catalogue for the whole project at the repository's root rather than
# one per app: the pages, forms and emails share their words ("link",
# "expires"), and a translator keeps them consistent in one file.
LOCALE_PATHS = [BASE_DIR / "locale"]
# The switcher's choice (Django's set_language view) lives in this cookie,
# sent like the session's: over HTTPS only when the site is.
LANGUAGE_COOKIE_SECURE = envbool("HTTPS", False)
LANGUAGE_COOKIE_HTTPONLY = True
LANGUAGE_COOKIE_SAMESITE = "Lax"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

# --- Files ----------------------------------------------------------------
STATIC_URL = "static/"
STATIC_ROOT = Path(os.environ.get("STATIC_ROOT", BASE_DIR / "var" / "static"))
# The project-wide static files (the favicon), beside the apps' own.
STATICFILES_DIRS = [BASE_DIR / "microcloud" / "static"]
MEDIA_ROOT = Path(os.environ.get("MEDIA_ROOT", BASE_DIR / "media"))
# Uploaded bytes are never served from MEDIA_URL: downloads go through views
# that check ownership or the share's expiry.
MEDIA_URL = "/media/"
# Where file bytes live: the local disk (empty, the default: a
# FileSystemStorage that syncs what it saves before the row is committed) or
# an S3-compatible bucket, s3://BUCKET[/PREFIX][?endpoint=...&region=...]
# (storage.url; credentials from AWS_ACCESS_KEY_ID and
# AWS_SECRET_ACCESS_KEY).
STORAGE_URL = os.environ.get("STORAGE_URL", "")
STORAGES = {
    "default": storage_from_url(STORAGE_URL),
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedManifestStaticFilesStorage"},
}
# Without collectstatic's manifest (a bare runserver), fall back to the plain
# file name instead of failing every page that links a static file.
WHITENOISE_MANIFEST_STRICT = False
# Largest accepted upload, in bytes (default 1 GiB); larger ones get a 413.
MAX_UPLOAD_BYTES = envint("MAX_UPLOAD_BYTES", 1024**3)
# Django's in-memory handler for small uploads; then a big upload's bytes go into a
# bucket as they arrive, or to a temporary file handed to the disk as they
# arrive (its file is synced before it is listed: storage.disk).
FILE_UPLOAD_HANDLERS = [
    "django.core.files.uploadhandler.MemoryFileUploadHandler",
    # Into a bucket as they arrive, when the storage is one.
    "storage.upload_handlers.StreamingStorageUploadHandler",
    "storage.upload_handlers.WritebackTemporaryFileUploadHandler",
]
# Stored files and the folders made for them: the owner only (the service's
# user). The database and var/ get the same through umask 077 (make run, the
# systemd units in docs/deployment.md).
FILE_UPLOAD_PERMISSIONS = 0o600
FILE_UPLOAD_DIRECTORY_PERMISSIONS = 0o700
# Resumable (tus) uploads, /api/uploads/: seconds an unfinished upload is kept
# after its last progress (and a finished one's answer after its finish), and
# the largest chunk one request may carry (413 above it, before reading).
UPLOAD_EXPIRES_AFTER = envint("UPLOAD_EXPIRES_AFTER", 24 * 3600, minimum=1)
TUS_MAX_CHUNK_BYTES = envint("TUS_MAX_CHUNK_BYTES", 64 * 1024**2, minimum=1)
# The chunk the web app's uploads send per request (never more than the
# above): small enough that a proxy's body limit or a slow link does not
# hold one request for long, big enough that per-request costs stay small.
TUS_WEB_CHUNK_BYTES = envint("TUS_WEB_CHUNK_BYTES", 8 * 1024**2, minimum=1)
# A bucket joins no part under 5 MiB but the last (SMALLEST_PART in
# storage/bucket_partials.py, not imported here: it would load botocore into
# every process): below that, no upload of more than one chunk could be sent.
if STORAGES["default"]["BACKEND"] == BUCKET_BACKEND and TUS_MAX_CHUNK_BYTES < 5 * 1024**2:
    raise ImproperlyConfigured(
        "TUS_MAX_CHUNK_BYTES must be at least 5242880 (5 MiB) with a bucket (STORAGE_URL), "
        f"got {TUS_MAX_CHUNK_BYTES}: S3 joins no smaller part but the last"
    )

# --- Security (production values when DEBUG is off) -----------------------
SECURE_PROXY_SSL_HEADER = ("HTTP_X_FORWARDED_PROTO", "https") if envbool("BEHIND_TLS_PROXY", False) else None
SECURE_SSL_REDIRECT = envbool("SECURE_SSL_REDIRECT", not DEBUG and envbool("HTTPS", False))
SESSION_COOKIE_SECURE = envbool("HTTPS", False)
CSRF_COOKIE_SECURE = envbool("HTTPS", False)
SECURE_HSTS_SECONDS = envint("SECURE_HSTS_SECONDS", 0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = envbool("SECURE_HSTS_INCLUDE_SUBDOMAINS", False)
SECURE_HSTS_PRELOAD = envbool("SECURE_HSTS_PRELOAD", False)
SECURE_CONTENT_TYPE_NOSNIFF = True
X_FRAME_OPTIONS = "DENY"
# Health checks and scrapes come over plain HTTP from inside the network
# (a supervisor, a load balancer, Prometheus): answered, not redirected.
SECURE_REDIRECT_EXEMPT = [r"^healthz$", r"^readyz$", r"^metrics$"]

# --- REST API -------------------------------------------------------------
REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": [
        "api.authentication.TokenAuthentication",
        "rest_framework.authentication.SessionAuthentication",
    ],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": [
        "rest_framework.parsers.JSONParser",
        "api.parsers.FormParser",
        "rest_framework.parsers.MultiPartParser",
    ],
    "DEFAULT_PAGINATION_CLASS": "api.pagination.StandardPagination",
    "DEFAULT_SCHEMA_CLASS": "drf_spectacular.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "api.exceptions.api_exception_handler",
}
SPECTACULAR_SETTINGS = {
    "TITLE": "Microcloud sharing API",
    "DESCRIPTION": "Upload files and share them through links that expire.",
    "VERSION": "1.0.0",
    "SERVE_INCLUDE_SCHEMA": False,
    # Operations are tagged by the path segment after /api/ (files, shares, ...).
    # Named, not guessed from the common prefix: the upload requests' tus
    # views at /r/<token>/uploads/ are DRF views too (left out of the schema).
    "SCHEMA_PATH_PREFIX": r"/api/",
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    # Separate request and response components (a read-only field is never
    # required of a client), and error answers with bodies, so clients
    # generated from the schema work unedited (tests/test_openapi_client.py).
    "COMPONENT_SPLIT_REQUEST": True,
    # A name of its own rather than the generic KindEnum a generated client would get.
    "ENUM_NAME_OVERRIDES": {
        "ShareEventKindEnum": "sharing.models.events.ShareEvent.Kind",
        "WebhookEndpointStateEnum": "webhooks.models.WebhookEndpoint.State",
        "WebhookEndpointReenableEnum": ["active"],
        # Two end_reason fields: the shares' keeps the name clients already use.
        "EndReasonEnum": "sharing.models.state.EndReason",
        "UploadRequestEndReasonEnum": "collect.models.UploadRequest.EndReason",
    },
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "api.schema.add_error_answers",
        "api.schema.declare_input_rules",
    ],
}

# --- Shared cache and rate limits -----------------------------------------
# REDIS_URL selects Django's Redis cache, which every worker and node shares;
# rate limits then count there. Without it they count in a SQLite file that
# the processes of one machine share (several web nodes need REDIS_URL).
REDIS_URL = os.environ.get("REDIS_URL", "")
if REDIS_URL:
    CACHES = {
        "default": {
            "BACKEND": "django.core.cache.backends.redis.RedisCache",
            "LOCATION": REDIS_URL,
            # Several deployments (or test runs) may share one Redis.
            "KEY_PREFIX": os.environ.get("CACHE_KEY_PREFIX", "microcloud"),
        }
    }
RATELIMIT_SQLITE_PATH = Path(os.environ.get("RATELIMIT_SQLITE_PATH", BASE_DIR / "var" / "ratelimit.sqlite3"))
# Log-in attempts (API token and admin) allowed per client address, and
# failed ones per username, in any 10 minutes; more get 429 with Retry-After.
LOGIN_ATTEMPTS_PER_ADDRESS = envint("LOGIN_ATTEMPTS_PER_ADDRESS", 30, minimum=1)
# Failed ones for one username from one address (a guesser pauses only
# itself), and from all addresses together: a ceiling far above it, so that
# locking an owner out takes many addresses (ratelimit/logins.py).
LOGIN_FAILURES_PER_USERNAME_AND_ADDRESS = envint("LOGIN_FAILURES_PER_USERNAME_AND_ADDRESS", 10, minimum=1)
LOGIN_FAILURES_PER_USERNAME = envint("LOGIN_FAILURES_PER_USERNAME", 100, minimum=1)
# API tokens one user may hold at once (each log-in at POST /api/auth/token/ adds one).
API_TOKENS_PER_USER = envint("API_TOKENS_PER_USER", 100, minimum=1)
# Trusted reverse proxies in front of the web server: the client address is
# that many entries from the end of X-Forwarded-For (0: REMOTE_ADDR).
NUM_PROXIES = envint("NUM_PROXIES", 0, minimum=0)

# --- Public links -----------------------------------------------------------
# Requests a minute one client address may make to public links (pages and
# downloads); generous enough for a browser resuming a big download.
LINK_RATE_LIMIT = envint("LINK_RATE_LIMIT", 600, minimum=1)
# Whether a link's page names who shared it (the owner's full name, else
# their username): a recipient deciding whether to trust a file wants to know.
LINK_SHOWS_OWNER = envbool("LINK_SHOWS_OWNER", True)
# Seconds a limited link's response may go without the client acknowledging
# a byte before its connection is dropped and its unsent bytes go back to the
# link's budget (links.delivery): a cut the server never hears of would
# otherwise hold them for the kernel's ~15 minutes of retries.
DOWNLOAD_STALL_TIMEOUT = envint("DOWNLOAD_STALL_TIMEOUT", 60, minimum=1)
# How much of a visitor's address a share's history keeps (downloads, wrong
# passwords): "truncated" (IPv4 last octet zeroed, IPv6 first 48 bits kept),
# "full", or "none".
EVENT_CLIENT_ADDRESS = os.environ.get("EVENT_CLIENT_ADDRESS", "truncated").strip().lower()
if EVENT_CLIENT_ADDRESS not in ("truncated", "full", "none"):
    raise ImproperlyConfigured(f"EVENT_CLIENT_ADDRESS must be truncated, full or none, got {EVENT_CLIENT_ADDRESS!r}")

# Let something else send the bytes of a whole-file download of a link
# without a limit once Django has made every check and counted it:
# "x-accel-redirect" (nginx), "x-sendfile" (Apache mod_xsendfile, lighttpd),
# "presigned" (the bucket itself, by a redirect; never for a link with a
# password), or "" (Django streams). The first two only behind such a
# server: reached directly, an offloaded download is an empty answer. See
# docs/deployment.md.
DOWNLOAD_OFFLOAD = os.environ.get("DOWNLOAD_OFFLOAD", "").strip().lower()
if DOWNLOAD_OFFLOAD not in ("", "x-accel-redirect", "x-sendfile", "presigned"):
    raise ImproperlyConfigured(
        f"DOWNLOAD_OFFLOAD must be x-accel-redirect, x-sendfile, presigned or empty, got {DOWNLOAD_OFFLOAD!r}"
    )
# "presigned" (a bucket only): a redirect to a URL the bucket signed, valid at
# most this many seconds and never past the share's deadline.
DOWNLOAD_PRESIGNED_SECONDS = envint("DOWNLOAD_PRESIGNED_SECONDS", 60, minimum=1)
if (DOWNLOAD_OFFLOAD == "presigned") != bool(STORAGE_URL.strip()) and DOWNLOAD_OFFLOAD:
    raise ImproperlyConfigured(
        "DOWNLOAD_OFFLOAD=presigned needs a bucket (STORAGE_URL), and x-accel-redirect or x-sendfile the "
        "local disk (no STORAGE_URL)"
    )
# The internal nginx location that serves MEDIA_ROOT (X-Accel-Redirect only).
DOWNLOAD_OFFLOAD_PREFIX = os.environ.get("DOWNLOAD_OFFLOAD_PREFIX", "/_protected/")
if not (DOWNLOAD_OFFLOAD_PREFIX.startswith("/") and DOWNLOAD_OFFLOAD_PREFIX.endswith("/")):
    raise ImproperlyConfigured(f"DOWNLOAD_OFFLOAD_PREFIX must start and end with /, got {DOWNLOAD_OFFLOAD_PREFIX!r}")

# --- Upload requests (links that collect files, /r/<token>/) ---------------
# Requests a minute one client address may make to upload requests' links
# (their pages and tus endpoints together); more get 429 with Retry-After.
REQUEST_RATE_LIMIT = envint("REQUEST_RATE_LIMIT", 600, minimum=1)
# Unfinished uploads one request takes at once, and all of an owner's
# requests together; more are refused (429) until one finishes or goes.
REQUEST_UNFINISHED_UPLOADS = envint("REQUEST_UNFINISHED_UPLOADS", 20, minimum=1)
REQUEST_UNFINISHED_UPLOADS_PER_OWNER = envint("REQUEST_UNFINISHED_UPLOADS_PER_OWNER", 100, minimum=1)
# Seconds an upload through a request is kept before its first bytes (each
# chunk then renews it as UPLOAD_EXPIRES_AFTER says), so one nobody writes
# to gives its place and its owner's space back within minutes.
REQUEST_UPLOAD_START_TIMEOUT = envint("REQUEST_UPLOAD_START_TIMEOUT", 600, minimum=1)

# --- Expiry daemon --------------------------------------------------------
# Seconds between the daemon's window reloads; 0 means "follow the policy"
# (1 day when the default lifetime is a day or more, else a tenth of it).
EXPIRY_REFRESH_INTERVAL = envfloat("EXPIRY_REFRESH_INTERVAL", 0)
# Timer coalescing (expiry.coalescing): the slack is EXPIRY_COALESCE seconds
# at EXPIRY_COALESCE_FULL_RATE expiries a second or more, in proportion below
# (a full rate of 0: always the whole slack).
EXPIRY_COALESCE = envfloat("EXPIRY_COALESCE", 0.001)
EXPIRY_COALESCE_FULL_RATE = envfloat("EXPIRY_COALESCE_FULL_RATE", 10_000.0)
# Seconds between checks for shares created or renewed by other processes.
EXPIRY_PICKUP_INTERVAL = envfloat("EXPIRY_PICKUP_INTERVAL", 0.05)
# Seconds a lease kept as a row lasts unless renewed (PostgreSQL with
# `runexpiry --lease on`: a stand-by takes over within about this after a
# crash). SQLite's lease is a lock on a file beside the database: no ttl.
EXPIRY_LEASE_TTL = envfloat("EXPIRY_LEASE_TTL", 5.0)
# SQLite: the UNIX datagram socket web processes notify the daemon through
# (default: the database file's path + ".wakeup").
EXPIRY_WAKEUP_SOCKET = os.environ.get("EXPIRY_WAKEUP_SOCKET", "")
# Seconds between the daemon's purges of shares ended longer than the
# policy's retention ago, and between its sweeps for ephemeral files left
# with no live share (a safety net: each ending reaps its file at once).
EXPIRY_PURGE_INTERVAL = envfloat("EXPIRY_PURGE_INTERVAL", 60.0)
EXPIRY_SWEEP_INTERVAL = envfloat("EXPIRY_SWEEP_INTERVAL", 5.0)
if not (EXPIRY_PURGE_INTERVAL > 0 and EXPIRY_SWEEP_INTERVAL > 0):
    raise ImproperlyConfigured("EXPIRY_PURGE_INTERVAL and EXPIRY_SWEEP_INTERVAL must be more than 0 seconds.")

# --- Email ------------------------------------------------------------------
# Notices to share owners (first download, expiry reminder; docs/deployment.md,
# Email). The console backend prints them; SMTP sends them for real.
EMAIL_BACKEND = os.environ.get("EMAIL_BACKEND", "django.core.mail.backends.console.EmailBackend")
EMAIL_HOST = os.environ.get("EMAIL_HOST", "localhost")
EMAIL_PORT = envint("EMAIL_PORT", 25, minimum=1)
EMAIL_HOST_USER = os.environ.get("EMAIL_HOST_USER", "")
EMAIL_HOST_PASSWORD = os.environ.get("EMAIL_HOST_PASSWORD", "")
EMAIL_USE_TLS = envbool("EMAIL_USE_TLS", False)
EMAIL_USE_SSL = envbool("EMAIL_USE_SSL", False)
if EMAIL_USE_TLS and EMAIL_USE_SSL:
    raise ImproperlyConfigured("Set EMAIL_USE_TLS (STARTTLS) or EMAIL_USE_SSL (implicit TLS), not both.")
# Seconds an SMTP connection may block the mail thread.
EMAIL_TIMEOUT = envfloat("EMAIL_TIMEOUT", 30.0)
# The file backend's folder (django.core.mail.backends.filebased.EmailBackend).
EMAIL_FILE_PATH = os.environ.get("EMAIL_FILE_PATH", str(BASE_DIR / "var" / "mail"))
DEFAULT_FROM_EMAIL = os.environ.get("DEFAULT_FROM_EMAIL", "microcloud@localhost")
# Where the service is reached, for the link in notices (e.g. https://files.example.com);
# empty: the notices name no address.
SITE_URL = os.environ.get("SITE_URL", "")

# --- Webhooks ---------------------------------------------------------------
# Deliveries (webhooks/): sent by a worker thread in runexpiry (or by
# `manage.py runwebhooks`). Seconds a send may take before it counts as failed.
WEBHOOK_TIMEOUT = envfloat("WEBHOOK_TIMEOUT", 10.0)
# Seconds a worker's claim on a delivery lasts: a worker killed mid-send is
# replaced by another after this. Keep it above WEBHOOK_TIMEOUT.
WEBHOOK_CLAIM_SECONDS = envfloat("WEBHOOK_CLAIM_SECONDS", 60.0)
# Retries back off exponentially: WEBHOOK_RETRY_BASE seconds after the first
# failure, doubling up to WEBHOOK_RETRY_MAX; after WEBHOOK_RETRY_WINDOW seconds
# of failures the endpoint is marked failing and nothing more is sent to it.
WEBHOOK_RETRY_BASE = envfloat("WEBHOOK_RETRY_BASE", 5.0)
WEBHOOK_RETRY_MAX = envfloat("WEBHOOK_RETRY_MAX", 3600.0)
WEBHOOK_RETRY_WINDOW = envfloat("WEBHOOK_RETRY_WINDOW", 86400.0)
# Seconds between a worker's looks for due deliveries when it has none.
WEBHOOK_POLL_INTERVAL = envfloat("WEBHOOK_POLL_INTERVAL", 1.0)
# runexpiry's webhook thread, with nothing pending at all (SQLite), sleeps
# until poked by the daemon (another process committed, or this one wrote
# events), and looks on its own only this often, as a safety net.
WEBHOOK_IDLE_WAIT = envfloat("WEBHOOK_IDLE_WAIT", 60.0)
# Deliveries a worker sends at once, each to a different endpoint: a slow or
# hanging receiver holds one of them, never the others' deliveries.
WEBHOOK_CONCURRENCY = envint("WEBHOOK_CONCURRENCY", 8, minimum=1)
# Endpoints on loopback, private, link-local, multicast or reserved addresses
# are refused (at registration and again before each send) unless this is on.
WEBHOOK_ALLOW_PRIVATE_TARGETS = envbool("WEBHOOK_ALLOW_PRIVATE_TARGETS", False)

# --- Malware scanning: microcloud/scan_settings.py (CLAMD_URL, SCAN_*) ---------

# --- Metrics ----------------------------------------------------------------
# /metrics (Prometheus's text format) answers only requests carrying
# "Authorization: Bearer <METRICS_TOKEN>"; empty (the default): it is off,
# a 404 for everyone, as it is for a wrong token.
METRICS_TOKEN = os.environ.get("METRICS_TOKEN", "").strip()
if METRICS_TOKEN and len(METRICS_TOKEN) < 20:
    raise ImproperlyConfigured("METRICS_TOKEN must be at least 20 characters (a random one), or empty for no /metrics")

# --- Logging --------------------------------------------------------------
LOG_LEVEL = os.environ.get("LOG_LEVEL", "INFO").upper()
LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    "formatters": {
        "plain": {"format": "%(asctime)s %(levelname)s %(name)s: %(message)s"},
        "server": {"()": "django.utils.log.ServerFormatter", "format": "[{server_time}] {message}", "style": "{"},
    },
    # A live link's token in a log is a live link for whoever reads the log.
    "filters": {"redact_tokens": {"()": "microcloud.logfilters.RedactShareTokens"}},
    "handlers": {
        "console": {"class": "logging.StreamHandler", "formatter": "plain", "filters": ["redact_tokens"]},
        # runserver's request lines (`make dev`), as Django prints them, redacted.
        "server": {"class": "logging.StreamHandler", "formatter": "server", "filters": ["redact_tokens"]},
    },
    "root": {"handlers": ["console"], "level": "WARNING"},
    "loggers": {
        "sharing": {"level": LOG_LEVEL},
        "links": {"level": LOG_LEVEL},
        "expiry": {"level": LOG_LEVEL},
        "notices": {"level": LOG_LEVEL},
        "scanning": {"level": LOG_LEVEL},
        # The endpoints it names may carry their receiver's key (query, userinfo).
        "webhooks": {"level": LOG_LEVEL, "filters": ["redact_tokens"]},
        "django": {"level": "WARNING"},
        # Also on the loggers that write request paths, so every handler
        # (an admin's own, a test's) gets the redacted message.
        "django.request": {"filters": ["redact_tokens"]},
        "django.security.csrf": {"filters": ["redact_tokens"]},
        # Configuring it replaces Django's own set-up, handler included.
        "django.server": {"handlers": ["server"], "level": "INFO", "propagate": False, "filters": ["redact_tokens"]},
    },
}
