# Two commands for a fresh machine (see README.md):
#   make run    install, migrate, and run the API, admin and expiry daemon on SQLite
#   make test   install, lint, and run the test suite (SQLite, then PostgreSQL)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000
# The web server: gunicorn (the default) or granian (WEB_SERVER=granian),
# WEB_WORKERS processes of WEB_THREADS threads (empty: the server's own rule,
# two gunicorn workers or one granian worker per core). deploy/web_servers.py
# makes the command line, for the container and the benchmarks too.
WEB_SERVER ?= gunicorn
WEB_WORKERS ?=
WEB_THREADS ?= 4
WEB_ENV = export WEB_SERVER='$(WEB_SERVER)' HOST='$(HOST)' PORT='$(PORT)' WEB_WORKERS='$(WEB_WORKERS)' \
	WEB_THREADS='$(WEB_THREADS)';
# The benchmarks' options for the same choice (bench-mixed and bench-side
# measure gunicorn only).
WEB_SIZE = $(if $(WEB_WORKERS),--workers $(WEB_WORKERS)) --threads $(WEB_THREADS)
WEB_OPTIONS = --server $(WEB_SERVER) $(WEB_SIZE)

.PHONY: install install-dev run dev migrate admin test test-fast test-sqlite test-postgres lint format bench bench-web \
	bench-mixed bench-idle bench-side install-wrk messages vendor-js mutants clean

$(VENV)/.runtime: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.granian: requirements-granian.txt $(VENV)/.runtime
	$(PY) -m pip install --quiet -r requirements-granian.txt
	touch $@

$(VENV)/.dev: requirements-dev.txt requirements-ldap.txt requirements-granian.txt $(VENV)/.runtime
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

install: $(VENV)/.runtime $(if $(filter granian,$(WEB_SERVER)),$(VENV)/.granian)
install-dev: $(VENV)/.dev

# var/ holds the database (with API tokens), the secret key and the rate
# counters: everything the service writes is its user's alone (umask 077).
VAR ?= var
RUN_ENV = umask 077; export SECRET_KEY_FILE=$${SECRET_KEY_FILE:-$(abspath $(VAR))/secret_key};

# A random SECRET_KEY, made once on the first start and kept in var/.
$(VAR)/secret_key:
	@$(RUN_ENV) mkdir -p $(VAR) && chmod 700 $(VAR) && \
	$(PYTHON) -c 'import secrets; print(secrets.token_urlsafe(50))' > $@.tmp && mv $@.tmp $@ && \
	echo "Created $@ (the SECRET_KEY; keep it private, keep it across upgrades)."

migrate: install $(VAR)/secret_key
	@# A var/ made by an older checkout (0755) is tightened too.
	@chmod 700 $(VAR)
	$(RUN_ENV) $(PY) manage.py migrate --noinput
	$(RUN_ENV) $(PY) manage.py collectstatic --noinput --verbosity 0

# Creates the first admin user when DJANGO_SUPERUSER_USERNAME and
# DJANGO_SUPERUSER_PASSWORD are set and that user does not exist yet.
admin: migrate
	@if [ -n "$$DJANGO_SUPERUSER_USERNAME" ] && [ -n "$$DJANGO_SUPERUSER_PASSWORD" ]; then \
		$(RUN_ENV) $(PY) manage.py createsuperuser --noinput --email "$${DJANGO_SUPERUSER_EMAIL:-admin@localhost}" 2>/dev/null \
		&& echo "Created admin user $$DJANGO_SUPERUSER_USERNAME." || echo "Admin user $$DJANGO_SUPERUSER_USERNAME exists."; \
	fi

# The web server (deploy/web_servers.py) and the expiry daemon side by side, under
# microcloud/serve.py (it says how): Ctrl-C, SIGTERM or a closed terminal
# stops both gracefully and ends with status 0; either ending on its own
# stops the other.
SERVE = exec $(PY) -m microcloud.serve --
# Where to open it, and who can sign in to the admin.
SAY_WHERE = echo "Serving http://$(HOST):$(PORT)/ (the web app), /admin/ (admin users: $$($(PY) manage.py \
	shell -v 0 -c 'from django.contrib.auth import get_user_model as u; print(", ".join(u().objects.filter( \
	is_superuser=True).values_list("username", flat=True)) or "none yet: $(PY) manage.py createsuperuser")'))\
	and /api/docs/. Ctrl-C stops it."
run: admin
	@$(RUN_ENV) $(SAY_WHERE); \
	$(WEB_ENV) $(SERVE) $(PY) -m deploy.web_servers

# Development only: Django's runserver (~45 ms per request on a kept-open
# connection) beside the expiry daemon; no auto-reload, which would outlive Ctrl-C.
dev: admin
	@$(RUN_ENV) $(SERVE) $(PY) manage.py runserver --noreload $(HOST):$(PORT)

# The whole suite twice: on SQLite, then on PostgreSQL (PG_TEST_URL, default
# postgres://postgres@127.0.0.1:5432/postgres; skipped with a message when
# unreachable, an error with CI=true). On each, the tests run in TEST_WORKERS
# processes (default: one per core), the fault tests one at a time beside the
# others (conftest.py groups them). PYTEST_ARGS go to pytest:
# PYTEST_ARGS="-m 'not fault'" skips the fault and load tests.
test: lint
	$(MAKE) --no-print-directory test-sqlite
	$(MAKE) --no-print-directory test-postgres

# The inner loop (about 90 s on 2 cores): everything but the benchmarks'
# smoke tests, the multi-process fault tests and the container tests (an
# image built with podman), on SQLite, one test process
# per core (TEST_WORKERS). No lint; `make test` before pushing.
TEST_WORKERS ?= $(shell nproc 2>/dev/null || echo 2)
PYTEST = $(PY) -m pytest -n $(TEST_WORKERS) --dist loadgroup
test-fast: install-dev
	env -u DATABASE_URL $(PYTEST) -m "not fault and not bench and not container" $(PYTEST_ARGS)

test-sqlite: install-dev
	@echo "=== pytest on SQLite"
	env -u DATABASE_URL $(PYTEST) $(PYTEST_ARGS)

test-postgres: install-dev
	PY=$(PY) .ci/pytest-postgres -n $(TEST_WORKERS) --dist loadgroup $(PYTEST_ARGS)

# The mutation run (about 20 minutes on 2 cores; docs/testing.md): small
# changes to the modules that hold the rules (mutation/config.py names them
# and the tests that judge each), each run against those tests on SQLite in
# a copy of the tracked files, never in this tree. Lists every mutant no test
# killed; fails if one is not a known equivalent. Not part of `make test`.
# MUTANTS_ARGS go to it (--module sharing/models/quotas.py, --list, --json FILE).
mutants: install-dev
	env -u DATABASE_URL $(PY) -m mutation --workers $(TEST_WORKERS) $(MUTANTS_ARGS)

# The full expiry benchmark (several minutes; docs/benchmarks.md, "Expiry benchmark").
bench: install-dev
	mkdir -p bench/results
	$(PY) -m bench --json bench/results/latest.json

# The web benchmark (about 15 minutes; docs/benchmarks.md, "Web benchmark"): gunicorn as
# `make run` starts it, driven by wrk on loopback, on SQLite and PostgreSQL,
# with file bytes on the disk and then in a bucket (moto's S3 server, from
# the development requirements).
bench-web: install-dev install-wrk
	mkdir -p bench/results
	$(PY) -m bench.web $(WEB_OPTIONS) --json bench/results/web-latest.json

# The expiry daemon's lateness under web load (about a minute): gunicorn and
# runexpiry side by side as `make run` starts them, wrk downloading and
# creating shares while 1,000 shares a second fall due, on SQLite and PostgreSQL.
bench-mixed: install install-wrk
	mkdir -p bench/results
	$(PY) -m bench.mixed $(WEB_SIZE) --json bench/results/mixed-latest.json

# The service's idle cost (about 75 s): gunicorn and runexpiry as `make run`
# starts them, on a temporary database and var directory, CPU, wake-ups and
# PSS of every process over 60 s (docs/benchmarks.md, "Idle cost").
bench-idle: install
	mkdir -p bench/results
	$(PY) -m bench.idle $(WEB_OPTIONS) --json bench/results/idle-latest.json

# The figures of a side-by-side comparison (about 2 minutes): gunicorn and
# runexpiry as `make run` starts them, on a temporary SQLite database; the hot
# 100 B link under wrk, a 100 MiB download and upload with curl, links refused
# after their expiry, one-download links raced by 50 clients, 3 runs of each.
bench-side: install-dev install-wrk
	mkdir -p bench/results
	$(PY) -m bench.side_by_side $(WEB_SIZE) --json bench/results/side-latest.json

install-wrk:
	@command -v "$${WRK:-wrk}" >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ]; then \
			apt-get install -y wrk || { apt-get update && apt-get install -y wrk; }; \
		else \
			echo "wrk (the HTTP load generator) is missing: install it with 'sudo apt-get install -y wrk'," >&2; \
			echo "or put any wrk 4.x on PATH (or set WRK=/path/to/wrk), then run make bench-web again." >&2; \
			exit 1; \
		fi; \
	}
	@# nginx for the offload scenarios; without it they are reported as not measured.
	@[ -x /usr/sbin/nginx ] || command -v nginx >/dev/null 2>&1 || { \
		if [ "$$(id -u)" = 0 ]; then \
			apt-get install -y nginx || { apt-get update && apt-get install -y nginx; }; \
		else \
			echo "nginx is missing: the offload scenarios will be skipped ('sudo apt-get install -y nginx')." >&2; \
		fi; \
	}

# Translations (docs/translations.md): re-extract every translatable string
# of the pages, forms and emails into locale/<lang>/LC_MESSAGES/django.po
# (GNU gettext's xgettext and msgmerge; entries no longer in the code are
# dropped), then compile the .mo files Django reads. Both are committed, so a
# clone runs without gettext. LOCALE=de starts a new language; without it,
# every language in locale/ is updated. tests/test_translations.py runs the
# same extraction and fails when a string is missing from a catalogue.
MAKEMESSAGES_ARGS = --ignore=tests --ignore=bench --ignore=var --ignore=media --ignore=docs \
	--add-location=file --no-obsolete
# Settings load, so a SECRET_KEY must be set; neither command uses it.
MESSAGES_ENV = SECRET_KEY="$${SECRET_KEY:-not-used-to-extract-or-compile-messages}"
messages: install
	$(MESSAGES_ENV) $(PY) manage.py makemessages $(if $(LOCALE),--locale=$(LOCALE),--all) $(MAKEMESSAGES_ARGS)
	$(MESSAGES_ENV) $(PY) manage.py compilemessages --ignore=.venv --ignore=var --ignore=media

# The browser's tus client, served from web/static/vendor/tus-js-client/
# (README.txt there): the npm package's tarball, refused unless it matches the
# integrity pinned here, then its minified browser bundle, source map and
# licence copied out. To update, set both values (`npm view
# tus-js-client@<version> dist.integrity`), run this, and update README.txt.
TUS_JS_VERSION = 4.3.1
TUS_JS_INTEGRITY = sha512-ZLeYmjrkaU1fUsKbIi8JML52uAocjEZtBx4DKjRrqzrZa0O4MYwT6db+oqePlspV+FxXJAyFBc/L5gwUi2OFsg==
TUS_JS_DIR = web/static/vendor/tus-js-client
vendor-js:
	@command -v npm >/dev/null 2>&1 || { echo "npm is needed to fetch tus-js-client (e.g. apt-get install npm)." >&2; exit 1; }
	@set -e; work=$$(mktemp -d); trap 'rm -rf "$$work"' EXIT; \
	npm pack --silent --pack-destination "$$work" tus-js-client@$(TUS_JS_VERSION) >/dev/null; \
	tarball="$$work/tus-js-client-$(TUS_JS_VERSION).tgz"; \
	got=$$($(PYTHON) -c 'import base64, hashlib, sys; \
		print("sha512-" + base64.b64encode(hashlib.sha512(open(sys.argv[1], "rb").read()).digest()).decode())' "$$tarball"); \
	if [ "$$got" != "$(TUS_JS_INTEGRITY)" ]; then \
		echo "tus-js-client-$(TUS_JS_VERSION).tgz is $$got, not the pinned $(TUS_JS_INTEGRITY)." >&2; exit 1; \
	fi; \
	tar -xzf "$$tarball" -C "$$work" package/LICENSE package/dist/tus.min.js package/dist/tus.min.js.map; \
	mkdir -p $(TUS_JS_DIR); \
	cp "$$work/package/LICENSE" "$$work/package/dist/tus.min.js" "$$work/package/dist/tus.min.js.map" $(TUS_JS_DIR)/; \
	echo "$(TUS_JS_DIR): tus-js-client $(TUS_JS_VERSION) ($$got)."

lint: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install-dev
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache
