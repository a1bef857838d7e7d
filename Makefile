# Two commands for a fresh machine (see README.md):
#   make run    install, migrate, and run the API, admin and expiry daemon on SQLite
#   make test   install, lint, and run the test suite (SQLite, then PostgreSQL)
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
HOST ?= 127.0.0.1
PORT ?= 8000

.PHONY: install install-dev run migrate admin test test-sqlite test-postgres lint format bench clean

$(VENV)/.runtime: requirements.txt
	$(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	$(PY) -m pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.dev: requirements-dev.txt $(VENV)/.runtime
	$(PY) -m pip install --quiet -r requirements-dev.txt
	touch $@

install: $(VENV)/.runtime
install-dev: $(VENV)/.dev

migrate: install
	mkdir -p var
	$(PY) manage.py migrate --noinput
	$(PY) manage.py collectstatic --noinput --verbosity 0

# Creates the first admin user when DJANGO_SUPERUSER_USERNAME and
# DJANGO_SUPERUSER_PASSWORD are set and that user does not exist yet.
admin: migrate
	@if [ -n "$$DJANGO_SUPERUSER_USERNAME" ] && [ -n "$$DJANGO_SUPERUSER_PASSWORD" ]; then \
		$(PY) manage.py createsuperuser --noinput --email "$${DJANGO_SUPERUSER_EMAIL:-admin@localhost}" 2>/dev/null \
		&& echo "Created admin user $$DJANGO_SUPERUSER_USERNAME." || echo "Admin user $$DJANGO_SUPERUSER_USERNAME exists."; \
	fi

# The web server and the expiry daemon side by side; Ctrl-C stops both.
run: admin
	@trap 'kill 0' INT TERM EXIT; \
	$(PY) manage.py runexpiry & \
	$(PY) manage.py runserver --noreload $(HOST):$(PORT)

# The whole suite twice: on SQLite, then on PostgreSQL (PG_TEST_URL, default
# postgres://postgres@127.0.0.1:5432/postgres; skipped with a message when
# unreachable, an error with CI=true). PYTEST_ARGS="-m 'not fault'" skips the
# fault and load tests (~3 min per database).
test: lint
	$(MAKE) --no-print-directory test-sqlite
	$(MAKE) --no-print-directory test-postgres

test-sqlite: install-dev
	@echo "=== pytest on SQLite"
	env -u DATABASE_URL $(PY) -m pytest $(PYTEST_ARGS)

test-postgres: install-dev
	PY=$(PY) .ci/pytest-postgres $(PYTEST_ARGS)

# The full expiry benchmark (several minutes; see docs/benchmarks.md).
bench: install-dev
	mkdir -p bench/results
	$(PY) -m bench --json bench/results/latest.json

lint: install-dev
	$(VENV)/bin/ruff check .
	$(VENV)/bin/ruff format --check .

format: install-dev
	$(VENV)/bin/ruff check --fix .
	$(VENV)/bin/ruff format .

clean:
	rm -rf $(VENV) var .pytest_cache .ruff_cache
