# The two commands: `make run` serves the platform on the embedded defaults,
# `make test` runs the whole suite. Both set up what they need and are idempotent.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
# The dev set-up: DEBUG on, the offline model for every model id.
DEV_ENV := DEBUG=true LLM_OFFLINE=true

.PHONY: run test lint typecheck migrate setup clean-db

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: requirements.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt $(VENV)/.installed
	$(BIN)/pip install --quiet -r requirements-dev.txt
	touch $@

setup: $(VENV)/.installed
	$(DEV_ENV) $(BIN)/python manage.py migrate --noinput
	$(DEV_ENV) $(BIN)/python manage.py devsetup
	$(DEV_ENV) $(BIN)/python manage.py collectstatic --noinput --verbosity 0

run: setup
	@echo ""
	@echo "  agentbuilder on http://localhost:$(PORT)"
	@echo "  API docs:  http://localhost:$(PORT)/v1/docs"
	@echo "  Admin:     http://localhost:$(PORT)/admin/  (user $${ADMIN_USERNAME:-admin})"
	@echo ""
	$(DEV_ENV) $(BIN)/python -m uvicorn agentbuilder.asgi:application --host $${HOST:-127.0.0.1} --port $(PORT)

test: $(VENV)/.installed-dev
	$(BIN)/python -m pytest

lint: $(VENV)/.installed-dev
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy

# Stops the embedded PostgreSQL under ./var (it keeps running between commands).
clean-db:
	-$(BIN)/python -c "import pgserver; pgserver.get_server('var/pgdata', cleanup_mode='stop').cleanup()"
