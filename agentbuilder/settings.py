"""Settings, driven by environment variables (see .env.example) with embedded defaults."""

from __future__ import annotations

import os
from datetime import timedelta
from pathlib import Path

import environ
from celery.schedules import crontab
from django.core.exceptions import ImproperlyConfigured

BASE_DIR = Path(__file__).resolve().parent.parent

env = environ.Env()
environ.Env.read_env(BASE_DIR / ".env", overwrite=False)


def secret(name: str, default: str | None = None) -> str | None:
    """A secret from NAME, or from the file that NAME_FILE points at (Docker/K8s secrets)."""
    path = env.str(f"{name}_FILE", default="")
    if path:
        try:
            return Path(path).read_text().strip()
        except OSError as exc:
            raise ImproperlyConfigured(f"{name}_FILE={path} cannot be read: {exc}") from None
    return env.str(name, default=default)


key_hint = 'Make one with: python -c "import secrets; print(secrets.token_urlsafe(50))"'


def signing_key(name: str, *, debug: bool) -> str | None:
    """A key from NAME or NAME_FILE; outside DEBUG one too short to be unguessable fails."""
    key = secret(name)
    # 32 characters: PyJWT's minimum for HS256, and longer than placeholders (`change-me`).
    if key and not debug and len(key) < 32:
        raise ImproperlyConfigured(
            f"{name} has {len(key)} characters; a key needs at least 32. {key_hint}"
        )
    return key


# ---------------------------------------------------------------- core

DEBUG = env.bool("DEBUG", default=False)
# What the embedded set-up keeps: the database, the dev signing key, collected static files.
VAR_DIR = Path(env.str("VAR_DIR", default=str(BASE_DIR / "var")))
SECRET_KEY = signing_key("SECRET_KEY", debug=DEBUG)
if not SECRET_KEY:
    if not DEBUG:
        raise ImproperlyConfigured(
            "SECRET_KEY (or SECRET_KEY_FILE) must be set when DEBUG is off (for local "
            f"development run `make run`, which sets DEBUG=true). {key_hint}"
        )
    from agentbuilder.dev_secret_key import dev_secret_key

    SECRET_KEY = dev_secret_key(VAR_DIR / "secret_key")

ALLOWED_HOSTS = env.list(
    "ALLOWED_HOSTS",
    default=["localhost", "127.0.0.1", "[::1]", "testserver"] if DEBUG else [],
)
CSRF_TRUSTED_ORIGINS = env.list("CSRF_TRUSTED_ORIGINS", default=[])

# ---------------------------------------------------------------- HTTPS

# A deployment is served over TLS, usually ended by a proxy in front of it: outside DEBUG,
# session and CSRF cookies travel over HTTPS only. Redirecting http:// and sending HSTS is
# the proxy's job unless these ask Django to do it; HSTS stays off until asked for because
# browsers remember it.
SESSION_COOKIE_SECURE = env.bool("SESSION_COOKIE_SECURE", default=not DEBUG)
CSRF_COOKIE_SECURE = env.bool("CSRF_COOKIE_SECURE", default=not DEBUG)
SECURE_SSL_REDIRECT = env.bool("SECURE_SSL_REDIRECT", default=False)
SECURE_HSTS_SECONDS = env.int("SECURE_HSTS_SECONDS", default=0)
SECURE_HSTS_INCLUDE_SUBDOMAINS = env.bool("SECURE_HSTS_INCLUDE_SUBDOMAINS", default=False)
SECURE_HSTS_PRELOAD = env.bool("SECURE_HSTS_PRELOAD", default=False)
# The header (X-Forwarded-Proto) by which the proxy says a request came over https. Trusted
# only when named: set it only if every request passes that proxy, which overwrites it.
if proxy_ssl_header := env.str("SECURE_PROXY_SSL_HEADER", default=""):
    SECURE_PROXY_SSL_HEADER = ("HTTP_" + proxy_ssl_header.upper().replace("-", "_"), "https")

INSTALLED_APPS = [
    "django.contrib.admin",
    "django.contrib.auth",
    "django.contrib.contenttypes",
    "django.contrib.sessions",
    "django.contrib.messages",
    "django.contrib.staticfiles",
    "rest_framework",
    "drf_spectacular",
    "drf_spectacular_sidecar",
    "guardian",
    "django_celery_beat",
    # The OAuth 2.1 authorization server's models and endpoints (agents.access.oauth).
    "oauth2_provider",
    "agents",
    "guardrails",
    "retrieval",
]

MIDDLEWARE = [
    "django.middleware.security.SecurityMiddleware",
    "agentbuilder.api.middleware.body_limit",
    # Where a change comes from, for the audit log (agents.audit.context).
    "agents.audit.context.audit_middleware",
    # The request's place in a trace: `traceparent` in and out (agents.telemetry.context).
    "agents.telemetry.context.trace_context_middleware",
    "agentbuilder.static_files.StaticFilesMiddleware",
    "django.contrib.sessions.middleware.SessionMiddleware",
    "django.middleware.common.CommonMiddleware",
    "django.middleware.csrf.CsrfViewMiddleware",
    "django.contrib.auth.middleware.AuthenticationMiddleware",
    "django.contrib.messages.middleware.MessageMiddleware",
    "django.middleware.clickjacking.XFrameOptionsMiddleware",
]

ROOT_URLCONF = "agentbuilder.urls"
WSGI_APPLICATION = "agentbuilder.wsgi.application"
ASGI_APPLICATION = "agentbuilder.asgi.application"

TEMPLATES = [
    {
        "BACKEND": "django.template.backends.django.DjangoTemplates",
        "DIRS": [],
        "APP_DIRS": True,
        "OPTIONS": {
            "context_processors": [
                "django.template.context_processors.request",
                "django.contrib.auth.context_processors.auth",
                "django.contrib.messages.context_processors.messages",
            ],
        },
    },
]

# ---------------------------------------------------------------- database

if env.str("DATABASE_URL", default=""):
    DATABASES = {"default": env.db("DATABASE_URL")}
else:
    from agentbuilder.embedded_db import database_settings

    DATABASES = {"default": database_settings(VAR_DIR / "pgdata")}
# A pool per process (psycopg_pool): each request thread borrows a connection and gives
# it back, so a burst of 500 streams needs DB_POOL_MAX_SIZE connections, not 500.
DB_POOL_MAX_SIZE = env.int("DB_POOL_MAX_SIZE", default=16)
if DB_POOL_MAX_SIZE > 0:
    DATABASES["default"].setdefault("OPTIONS", {})["pool"] = {
        "min_size": 1,
        "max_size": DB_POOL_MAX_SIZE,
        "timeout": env.float("DB_POOL_TIMEOUT", default=30.0),
    }
else:
    DATABASES["default"]["CONN_MAX_AGE"] = env.int("CONN_MAX_AGE", default=0)
    DATABASES["default"]["CONN_HEALTH_CHECKS"] = True
# The threads that run requests' sync work (agentbuilder.request_threads): a request keeps
# one for all its sync calls, requests share them. Fewer than the pool's connections, so a
# request thread never waits for one while the in-process ingestion threads hold theirs.
REQUEST_THREADS = env.int("REQUEST_THREADS", default=8)
DEFAULT_AUTO_FIELD = "django.db.models.BigAutoField"

# ---------------------------------------------------------------- auth

AUTHENTICATION_BACKENDS = [
    # Django's password login, refused by OIDC_LOCAL_LOGIN when single sign-on is on.
    "agents.access.sso.backends.LocalBackend",
    "agents.access.sso.backends.OidcBackend",
    "guardian.backends.ObjectPermissionBackend",
]
GUARDIAN_RAISE_403 = False
ANONYMOUS_USER_NAME = None  # no anonymous user row: every API call is authenticated

JWT_SIGNING_KEY = signing_key("JWT_SIGNING_KEY", debug=DEBUG) or SECRET_KEY
JWT_LIFETIME = timedelta(seconds=env.int("JWT_LIFETIME_SECONDS", default=3600))
JWT_ISSUER = "agentbuilder"

# Only the dev set-up (`make run`) creates this superuser. Outside DEBUG there is no default
# password: run there, devsetup would make a superuser who cannot log in, not admin/admin.
ADMIN_USERNAME = env.str("ADMIN_USERNAME", default="admin")
if (ADMIN_PASSWORD := secret("ADMIN_PASSWORD")) is None and DEBUG:
    # No password written in the source: the dev set-up makes a random one, kept beside
    # its signing key (`make run` prints where).
    from agentbuilder.dev_secret_key import dev_secret_key

    ADMIN_PASSWORD = dev_secret_key(VAR_DIR / "admin_password")

# ---------------------------------------------------------------- single sign-on (OpenID Connect)
# On when the three are set (agents.access.sso); the endpoints and keys come from the
# issuer's discovery document. Redirect URI to register: <base>/admin/oidc/callback/.

OIDC_ISSUER = env.str("OIDC_ISSUER", default="")
OIDC_CLIENT_ID = env.str("OIDC_CLIENT_ID", default="")
OIDC_CLIENT_SECRET = secret("OIDC_CLIENT_SECRET", default="")
OIDC_PROVIDER_NAME = env.str("OIDC_PROVIDER_NAME", default="SSO")
OIDC_SCOPES = env.str("OIDC_SCOPES", default="openid email profile")
OIDC_GROUPS_CLAIM = env.str("OIDC_GROUPS_CLAIM", default="groups")
OIDC_LOCAL_LOGIN = env.str("OIDC_LOCAL_LOGIN", default="superuser")
if OIDC_LOCAL_LOGIN not in ("superuser", "all", "off"):
    raise ImproperlyConfigured(
        f"OIDC_LOCAL_LOGIN={OIDC_LOCAL_LOGIN!r}: superuser, all or off (who may log in "
        "with a password while single sign-on is on)"
    )

# ---------------------------------------------------------------- OAuth

# The authorization server for MCP and A2A clients (agents.access.oauth, docs/api.md#oauth):
# django-oauth-toolkit narrowed to OAuth 2.1's authorization code with PKCE S256, rotating
# refresh tokens (a rotated one replayed revokes its whole family), tokens bound to a
# resource (RFC 8707) and stored hashed (RFC 9700).
OAUTH2_PROVIDER = {
    "OAUTH2_SERVER_CLASS": "agents.access.oauth.server.Server",
    "OAUTH2_VALIDATOR_CLASS": "agents.access.oauth.server.Validator",
    "OAUTH2_BACKEND_CLASS": "agents.access.oauth.server.Backend",
    "SCOPES": {
        "agents:read": "See the agents you may use and your runs",
        "agents:invoke": "Run agents as you",
    },
    "DEFAULT_SCOPES": ["agents:read", "agents:invoke"],
    "ACCESS_TOKEN_EXPIRE_SECONDS": env.int("OAUTH_ACCESS_TOKEN_SECONDS", default=3600),
    "REFRESH_TOKEN_EXPIRE_SECONDS": env.int("OAUTH_REFRESH_TOKEN_SECONDS", default=30 * 86400),
    "AUTHORIZATION_CODE_EXPIRE_SECONDS": 60,
    "PKCE_REQUIRED": True,
    "ROTATE_REFRESH_TOKEN": True,
    "REFRESH_TOKEN_REUSE_PROTECTION": True,
    "ALLOWED_REDIRECT_URI_SCHEMES": ["http", "https"],
    "ALLOW_LOCALHOST_LOOPBACK": True,
    "COMPLIANT_BCP_RFC9700_IMPLICIT_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PASSWORD_GRANT": True,
    "COMPLIANT_BCP_RFC9700_PKCE_METHOD": True,
    "COMPLIANT_BCP_RFC9700_ACCESS_TOKEN_TRANSPORT": True,
    "COMPLIANT_BCP_RFC9700_AUTHZ_RESPONSE_ISS": True,
    "COMPLIANT_BCP_RFC9700_TOKEN_STORAGE": True,
    "COMPLIANT_BCP_RFC9700_REFRESH_TOKEN": True,
    # http stays allowed for loopback redirect URIs (RFC 8252), which are what MCP clients
    # register; registration refuses http on any other host (agents.access.oauth).
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_SCHEME": False,
    "COMPLIANT_BCP_RFC9700_REDIRECT_URI_MATCHING": True,
    "COMPLIANT_BCP_RFC9700_PKCE_REQUIRED": True,
    "REQUEST_APPROVAL_PROMPT": "force",  # the consent page every time
}

# DOT's warning that http redirect URIs are allowed: only loopback ones are (above).
SILENCED_SYSTEM_CHECKS = ["oauth2_provider.W008"]

# ---------------------------------------------------------------- API

API_MAX_BODY_BYTES = env.int("API_MAX_BODY_BYTES", default=1024 * 1024)
# POST /v1/datasets/{id}/cases takes up to 10,000 cases a call: a larger body.
DATASET_MAX_BODY_BYTES = env.int("DATASET_MAX_BODY_BYTES", default=32 * 1024 * 1024)

REST_FRAMEWORK = {
    "DEFAULT_AUTHENTICATION_CLASSES": ["agents.access.authentication.BearerTokenAuthentication"],
    "DEFAULT_PERMISSION_CLASSES": ["rest_framework.permissions.IsAuthenticated"],
    "DEFAULT_PARSER_CLASSES": ["agentbuilder.api.parsers.JSONParser"],
    "DEFAULT_RENDERER_CLASSES": ["rest_framework.renderers.JSONRenderer"],
    "DEFAULT_SCHEMA_CLASS": "agentbuilder.api.openapi.AutoSchema",
    "EXCEPTION_HANDLER": "agentbuilder.api.errors.exception_handler",
    "DEFAULT_THROTTLE_CLASSES": [
        "agents.access.throttling.UserRateThrottle",
        "agents.access.throttling.AnonRateThrottle",
        # An API client's or user's own requestsPerMinute, if it has one (docs/api.md).
        "agents.access.throttling.CallerRateThrottle",
    ],
    "DEFAULT_THROTTLE_RATES": {
        "user": env.str("THROTTLE_USER_RATE", default="1200/min"),
        # Requests without a token (the schema, the docs page, public agent cards), per
        # address: a reader or a client's discovery needs a few.
        "anon": env.str("THROTTLE_ANON_RATE", default="120/min"),
        # POST /v1/auth/token per address, and failed credential checks per account (user
        # name or client id) from any address: 20 an hour keeps online guessing of even a
        # weak password slow, and locks a mistyping person out for at most an hour.
        "token": env.str("THROTTLE_TOKEN_RATE", default="60/min"),
        "token_account": env.str("THROTTLE_TOKEN_ACCOUNT_RATE", default="20/hour"),
        # OAuth dynamic client registration (POST /oauth/register) per address: a client
        # registers once per install, so a handful an hour is plenty.
        "oauth_register": env.str("THROTTLE_OAUTH_REGISTER_RATE", default="20/hour"),
    },
    # DRF's own address logic, should anything use it: REMOTE_ADDR, never X-Forwarded-For.
    "NUM_PROXIES": 0,
    "UNAUTHENTICATED_USER": None,
}
# Reverse proxies (addresses or networks) whose X-Forwarded-For is believed when throttles
# tell callers apart; none by default: the peer's address is the caller's.
TRUSTED_PROXIES = env.list("TRUSTED_PROXIES", default=[])

SPECTACULAR_SETTINGS = {
    "TITLE": "agentbuilder API",
    "DESCRIPTION": "Build, version and run LLM agents. Authenticate with POST /v1/auth/token "
    "and send `Authorization: Bearer <token>`.",
    "VERSION": "1.0.0",
    "OAS_VERSION": "3.1.0",
    "SERVE_INCLUDE_SCHEMA": False,
    "SWAGGER_UI_DIST": "SIDECAR",
    "SWAGGER_UI_FAVICON_HREF": "SIDECAR",
    "REDOC_DIST": "SIDECAR",
    "COMPONENT_SPLIT_REQUEST": True,
    "POSTPROCESSING_HOOKS": [
        "drf_spectacular.hooks.postprocess_schema_enums",
        "agentbuilder.api.openapi.sse_events",
        "agentbuilder.api.openapi.links",
    ],
    "ENUM_NAME_OVERRIDES": {
        "AgentTypeEnum": ["tool", "rag", "task"],
        "DocumentStatusEnum": ["pending", "ready", "failed"],
        "RunStatusEnum": ["queued", "in_progress", "completed", "failed", "canceled"],
    },
}

# ---------------------------------------------------------------- cache (throttling)

CACHES = {"default": env.cache_url("CACHE_URL", default="locmemcache://")}

# ---------------------------------------------------------------- rate limits

# The requestsPerMinute and tokensPerMinute of API clients and users are counted here when it
# names a Redis (INCRBY + EXPIRE), else in PostgreSQL (one upsert a request): either way
# across every process (agents.access.rate_limits). By default the cache's Redis, if it is one.
_cache_url = env.str("CACHE_URL", default="")
RATE_LIMITS_REDIS_URL = env.str(
    "RATE_LIMITS_REDIS_URL",
    default=_cache_url if _cache_url.startswith(("redis://", "rediss://")) else "",
)

# ---------------------------------------------------------------- Celery

CELERY_BROKER_URL = env.str("CELERY_BROKER_URL", default="")
# Without a broker, tasks run in the calling process: the embedded set-up needs no Redis.
CELERY_TASK_ALWAYS_EAGER = not CELERY_BROKER_URL
if CELERY_TASK_ALWAYS_EAGER:
    # An eager task still borrows a producer (for its serializer), whose connection, with no
    # URL, is AMQP's and logs "No hostname was supplied" at each task. In-memory, named.
    CELERY_BROKER_URL = "memory://localhost"
CELERY_TASK_EAGER_PROPAGATES = True
CELERY_RESULT_BACKEND = None
# No results are kept, so beat has no result store to clean daily (it would add the task).
CELERY_RESULT_EXPIRES = None
# Celery's Django fixup closes a worker's database connections (and, in a prefork worker,
# Django's connection pool) before and after every task unless this is set: two new
# PostgreSQL connections per ingestion (bench/ingestion.py: 391 against 539 chunks/s).
# 0 restores Celery's default.
CELERY_DB_REUSE_MAX = env.int("CELERY_DB_REUSE_MAX", default=1000)
# Schedules (agents.schedules): beat reads their PeriodicTask rows, every cron loaded
# whatever its hour (agents.schedules.beat), and writes when each last fired after every
# tick it sends, not every 3 minutes: a beat restarted in between would send it again.
CELERY_BEAT_SCHEDULER = "agents.schedules.beat:ScheduleScheduler"
CELERY_BEAT_SYNC_EVERY = 1
# The platform's own periodic tasks, which beat writes as PeriodicTask rows at its start
# (the embedded one too): the daily prune (RUN_RETENTION_DAYS), at a quiet hour (UTC).
CELERY_BEAT_SCHEDULE = {
    "prune runs past RUN_RETENTION_DAYS": {
        "task": "agents.runs.prune",
        "schedule": crontab(minute=17, hour=3),
    },
}
# Without a broker, the server process runs beat in a thread from its start-up
# (agentbuilder.beat): `make run` fires schedules with no other process. With one, run
# `celery -A agentbuilder beat` once per deployment, and leave this off.
BEAT_EMBEDDED = env.bool("BEAT_EMBEDDED", default=CELERY_TASK_ALWAYS_EAGER)

# ---------------------------------------------------------------- liveness

# A run or an ingestion whose process died (killed, out of memory, host lost) is closed
# within this many seconds by any other live process, or by its own restart: runs become
# `failed` (`interrupted`), documents are ingested again (agentbuilder.liveness).
LIVENESS_SECONDS = env.float("LIVENESS_SECONDS", default=60.0)
# Whether this process renews leases and sweeps (a server and a worker from start-up). Off
# in the test runner, whose sweeps would race the tests' own rows; the liveness tests turn
# it on in the server processes they start.
LIVENESS_THREAD = env.bool("LIVENESS_THREAD", default=True)
# Background runs (`"background": true`, an A2A send that returns at once) are run by a
# Celery worker, or without a broker by the web process: this many at once per process;
# the others wait their turn, `queued` (agents.runs.detached).
DETACHED_RUNS_CONCURRENCY = env.int("DETACHED_RUNS_CONCURRENCY", default=32)
# Without a broker, experiments' slots (agents.evals.runner) are threads of the web process:
# at most this many at once, whatever the experiments' `concurrency` (their runs take turns
# in the runner above).
EXPERIMENT_SLOTS = env.int("EXPERIMENT_SLOTS", default=8)
# On SIGTERM a server or worker lets its live runs go on this long, then ends the rest
# `failed` / `interrupted` (agentbuilder.shutdown). Whole seconds: the Makefile gives
# uvicorn this plus 5 as its own limit for the other streams (followers, MCP sessions).
SHUTDOWN_GRACE_SECONDS = env.int("SHUTDOWN_GRACE_SECONDS", default=30)
# A queued run no worker has claimed after this long is handed over again (its message
# may be lost: a broker restarted without persistence), and failed `not_started` after
# RUN_QUEUE_TIMEOUT_SECONDS (agents.runs.background).
RUN_QUEUE_LEASE_SECONDS = env.float("RUN_QUEUE_LEASE_SECONDS", default=120.0)
RUN_QUEUE_TIMEOUT_SECONDS = env.float("RUN_QUEUE_TIMEOUT_SECONDS", default=3600.0)
# A run's stored events (GET /v1/runs/{id}/events) are kept this many seconds after it
# ended, then pruned by the liveness passes (agents.runs.event_prune).
RUN_EVENTS_TTL = env.float("RUN_EVENTS_TTL", default=86400.0)
# Runs that ended more than this many days ago are deleted daily, with their events and
# webhook deliveries (agents.runs.retention): but runs with feedback, and the audit log.
# 0 or empty: runs are kept forever. `manage.py prune --days N` prunes by hand.
RUN_RETENTION_DAYS = int(env.str("RUN_RETENTION_DAYS", default="90").strip() or 0)
# Classes (dotted paths) that see every run's events and may stop a run: telemetry and
# policies plug in here (agents.runs.hooks). Budgets and tokensPerMinute do not: they are
# the run's spend gate, which sees each model call (agents.runs.spending).
RUN_HOOKS = env.list("RUN_HOOKS", default=[])
# Without a broker, uploads are ingested by this many threads of the web process, after
# the 202 answer; 0: inside the upload request (the tests, whose rows other threads
# cannot see).
INGESTION_WORKERS = env.int("INGESTION_WORKERS", default=2)
# Ingestions a document may start before it is `failed` for good: each one its process
# died in (a document that brings its worker down) counts.
INGESTION_MAX_ATTEMPTS = env.int("INGESTION_MAX_ATTEMPTS", default=3)

# ---------------------------------------------------------------- metrics (Prometheus)

# GET /metrics answers a scraper that sends `Authorization: Bearer <METRICS_TOKEN>`. Unset,
# /metrics is a 404 for everyone (agentbuilder.metrics says why not loopback only) and no
# process counts: set it for the web tier and the Celery workers alike.
METRICS_TOKEN = secret("METRICS_TOKEN")
# Every process that runs runs (server workers, Celery workers on the same filesystem) counts
# into its own files here and a scrape adds them all up (prometheus_client's multiprocess
# mode). The library picks that mode when it is first imported, from the environment: set
# here, before anything imports it. `manage.py metrics_reset` empties it at a deployment's
# start (`make run`, docker/compose.yaml's migrate).
PROMETHEUS_MULTIPROC_DIR = env.str("PROMETHEUS_MULTIPROC_DIR", default=str(VAR_DIR / "metrics"))
os.environ["PROMETHEUS_MULTIPROC_DIR"] = PROMETHEUS_MULTIPROC_DIR

# ---------------------------------------------------------------- LLM

LLM_OFFLINE = env.bool("LLM_OFFLINE", default=False)
# The catalog model the dev set-up's sample agents use (`make run`, agents.examples). Empty:
# the one the configured provider serves: with only OPENAI_* set, openai/<the first of
# OPENAI_MODELS> (else openai/gpt-4o-mini); otherwise the samples' own Bedrock ids.
DEFAULT_MODEL = env.str("DEFAULT_MODEL", default="")
# Names an OpenAI-compatible server serves (Ollama's llama3.2 …): the dev set-up adds each
# to the catalog as openai/<name>, as `manage.py models add` does anywhere.
OPENAI_MODELS = env.list("OPENAI_MODELS", default=[])

# ---------------------------------------------------------------- MCP

# Header values of registered MCP servers (API keys, tokens) are stored encrypted with a key
# derived from this; earlier keys in the fallbacks still decrypt, so the key can be rotated.
MCP_SECRETS_KEY = signing_key("MCP_SECRETS_KEY", debug=DEBUG) or SECRET_KEY
MCP_SECRETS_KEY_FALLBACKS = [
    key.strip()
    for key in (secret("MCP_SECRETS_KEY_FALLBACKS") or "").replace("\n", ",").split(",")
    if key.strip()
]
# Off: agents and requests may only use servers registered under /v1/mcp-servers.
MCP_ALLOW_UNREGISTERED_URLS = env.bool("MCP_ALLOW_UNREGISTERED_URLS", default=False)
# Server-side request forgery guard: an MCP URL whose host resolves to a loopback, private,
# link-local, multicast or otherwise non-public address is refused unless its host name,
# address or network (CIDR) is listed here; PRIVATE_NETWORKS opens private and loopback
# ranges (never link-local, where cloud metadata services live).
MCP_ALLOWED_HOSTS = env.list("MCP_ALLOWED_HOSTS", default=[])
MCP_ALLOW_PRIVATE_NETWORKS = env.bool("MCP_ALLOW_PRIVATE_NETWORKS", default=False)
MCP_TIMEOUT_SECONDS = env.float("MCP_TIMEOUT_SECONDS", default=30.0)  # unregistered URLs
MCP_TOOLS_CACHE_SECONDS = env.float("MCP_TOOLS_CACHE_SECONDS", default=30.0)
# Browser origins (`https://app.example.com`, as the browser sends them) that may call this
# server's own /v1/mcp; a request with any other Origin is refused (403) against DNS
# rebinding. SDK clients send no Origin and need no entry.
MCP_ALLOWED_ORIGINS = env.list("MCP_ALLOWED_ORIGINS", default=[])
# ---------------------------------------------------------------- webhooks

# Run events to URLs, signed as Standard Webhooks with the environment's secret, through
# MCP's address guard (MCP_ALLOWED_HOSTS, MCP_ALLOW_PRIVATE_NETWORKS) (agents.webhooks).
# Off: no body or agent may name a webhook, and A2A's push-notification methods answer
# -32003.
WEBHOOKS_ENABLED = env.bool("WEBHOOKS_ENABLED", default=True)
# A delivery not answered 2xx is tried again after BACKOFF seconds, doubled each time up to
# BACKOFF_MAX, until RETRY seconds have passed since its event.
WEBHOOK_RETRY_SECONDS = env.float("WEBHOOK_RETRY_SECONDS", default=86400.0)
WEBHOOK_BACKOFF_SECONDS = env.float("WEBHOOK_BACKOFF_SECONDS", default=5.0)
WEBHOOK_BACKOFF_MAX_SECONDS = env.float("WEBHOOK_BACKOFF_MAX_SECONDS", default=3600.0)
WEBHOOK_TIMEOUT_SECONDS = env.float("WEBHOOK_TIMEOUT_SECONDS", default=10.0)
# Every server and worker sends the deliveries due: it looks for them this often, and at
# once when it made one itself.
WEBHOOK_POLL_SECONDS = env.float("WEBHOOK_POLL_SECONDS", default=2.0)
WEBHOOK_CONCURRENCY = env.int("WEBHOOK_CONCURRENCY", default=8)

# A2A agent cards (GET /v1/a2a, /v1/a2a/{name}/.well-known/agent-card.json) without a token:
# every agent of the environment, for discovery. The JSON-RPC endpoint still needs a token.
A2A_PUBLIC_CARDS = env.bool("A2A_PUBLIC_CARDS", default=False)

# ---------------------------------------------------------------- retrieval

# Fixed per deployment: the vector column and its HNSW index are built for this size.
EMBEDDING_DIM = env.int("EMBEDDING_DIM", default=384)
EMBEDDING_PROVIDER = env.str("EMBEDDING_PROVIDER", default="local")  # local|bedrock|openai
EMBEDDING_MODEL = env.str("EMBEDDING_MODEL", default="") or None
# How search narrows its candidates to rerankerTopN: `local` scores query-term coverage
# (no model); `bedrock` calls Bedrock's Rerank API with RERANK_MODEL, a model id
# (amazon.rerank-v1:0 when empty, cohere.rerank-v3-5:0 …) or a full model ARN.
RERANK_PROVIDER = env.str("RERANK_PROVIDER", default="local")  # local|bedrock
RERANK_MODEL = env.str("RERANK_MODEL", default="") or None
RERANK_MAX_RETRIES = env.int("RERANK_MAX_RETRIES", default=2)
RERANK_TIMEOUT = env.float("RERANK_TIMEOUT", default=30.0)  # seconds per socket read
CHUNK_TOKENS = env.int("CHUNK_TOKENS", default=256)
CHUNK_OVERLAP = env.int("CHUNK_OVERLAP", default=32)
DOCUMENT_MAX_BYTES = env.int("DOCUMENT_MAX_BYTES", default=25 * 1024 * 1024)
# Django's own cap must let a document through; each route's parser enforces its limit
# (API_MAX_BODY_BYTES for JSON bodies, DOCUMENT_MAX_BYTES for uploads).
DATA_UPLOAD_MAX_MEMORY_SIZE = max(API_MAX_BODY_BYTES, DOCUMENT_MAX_BYTES + 64 * 1024)
# Reading a document (its text, split into chunks) runs in a child process within these
# bounds (retrieval.bounded_extract); past one the document is `failed` with the reason.
# PDF page content, decompressed, each page's counted (pages sharing a stream each count it).
DOCUMENT_MAX_DECOMPRESSED_BYTES = env.int("DOCUMENT_MAX_DECOMPRESSED_BYTES", default=64 * 2**20)
# Chunks of one document: 2,000 chunks of 256 tokens hold a book of about 700 pages.
DOCUMENT_MAX_CHUNKS = env.int("DOCUMENT_MAX_CHUNKS", default=2000)
# CPU seconds of the child (RLIMIT_CPU); a normal PDF reads at tens of pages per second.
DOCUMENT_EXTRACTION_SECONDS = env.float("DOCUMENT_EXTRACTION_SECONDS", default=30.0)
# Address space of the child (RLIMIT_AS), the interpreter and its libraries included.
DOCUMENT_EXTRACTION_MEMORY_BYTES = env.int("DOCUMENT_EXTRACTION_MEMORY_BYTES", default=2**30)
# Reranked nodes scoring below this (0..1) are left out of a RAG answer's context and
# sources, unless a RAG config sets its own `minScore`. 0.1 keeps the answering passage of
# every sample question the local reranker can see and drops every off-topic hit (0.0002
# at most): tests/retrieval/test_rag.py, docs/architecture.md#decisions.
RAG_SCORE_THRESHOLD = env.float("RAG_SCORE_THRESHOLD", default=0.1)
# Vector search compares every chunk when the filter leaves at most this many (exact, and
# about 2.5 ms per 1,000 chunks on a small VM), and uses the HNSW index otherwise, visiting
# at least HNSW_EF_SEARCH candidates (more when the filter keeps a small share of the index).
RETRIEVAL_EXACT_MAX_CHUNKS = env.int("RETRIEVAL_EXACT_MAX_CHUNKS", default=10_000)
HNSW_EF_SEARCH = env.int("HNSW_EF_SEARCH", default=600)  # recall@10 0.95+ at m 16

# ---------------------------------------------------------------- guardrails

# Streamed output is held until a sentence ends or this many characters pile up, then
# checked by the output guardrails before the client sees it.
GUARDRAIL_WINDOW_CHARS = env.int("GUARDRAIL_WINDOW_CHARS", default=200)

# ---------------------------------------------------------------- task agents

# Bounds on rendering a task agent's prompt template (agents.templating). Characters: what
# it may build or write, 1,000,000 being more than any model's context and a few MB of
# memory; steps: loop iterations plus calls, Jinja's own range() cap; seconds: wall time,
# where a real prompt takes milliseconds. Over them: 400 when saved if it shows, else the
# run fails with `template_limit`.
TASK_TEMPLATE_MAX_CHARS = env.int("TASK_TEMPLATE_MAX_CHARS", default=1_000_000)
TASK_TEMPLATE_MAX_STEPS = env.int("TASK_TEMPLATE_MAX_STEPS", default=100_000)
TASK_TEMPLATE_MAX_SECONDS = env.float("TASK_TEMPLATE_MAX_SECONDS", default=1.0)

# ---------------------------------------------------------------- agents calling agents

# How deep agents may call agents (a task agent as a tool; an agent over MCP or A2A, the
# depth travelling in the Agentbuilder-Call-Depth header): a call past it is refused, so an
# agent that reaches itself makes MAX_AGENT_DEPTH + 1 runs, not runs without end.
MAX_AGENT_DEPTH = env.int("MAX_AGENT_DEPTH", default=5)

# ---------------------------------------------------------------- i18n, static

LANGUAGE_CODE = "en-us"
TIME_ZONE = "UTC"
USE_I18N = True
USE_TZ = True

STATIC_URL = "static/"
STATIC_ROOT = VAR_DIR / "static"
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "whitenoise.storage.CompressedStaticFilesStorage"},
}
# Under `make run` uvicorn serves the admin's static files straight from the apps.
WHITENOISE_USE_FINDERS = DEBUG

# ---------------------------------------------------------------- traces (OpenTelemetry)

# Set: each run exports its spans (agents.telemetry) over OTLP/HTTP; the SDK reads the
# endpoint and the rest of the standard OTEL_* variables (OTEL_SERVICE_NAME,
# OTEL_EXPORTER_OTLP_HEADERS, OTEL_BSP_*) from the environment itself.
OTEL_EXPORTER_OTLP_ENDPOINT = env.str("OTEL_EXPORTER_OTLP_ENDPOINT", default="")
OTEL_SDK_DISABLED = env.bool("OTEL_SDK_DISABLED", default=False)
# Messages, answers, tool arguments and results on the spans (as the run keeps them, after
# its guardrails), each cut to a size.
OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT = env.bool(
    "OTEL_INSTRUMENTATION_GENAI_CAPTURE_MESSAGE_CONTENT", default=False
)
# The admin's run page links the run's trace: a URL with {trace_id} in it.
OTEL_TRACE_URL_TEMPLATE = env.str("OTEL_TRACE_URL_TEMPLATE", default="")

# ---------------------------------------------------------------- logging

LOGGING = {
    "version": 1,
    "disable_existing_loggers": False,
    # Each line names its trace and span (agents.telemetry.logs): the run's, or the
    # request's, whose answer's `traceparent` has the same ids.
    "filters": {"trace_ids": {"()": "agents.telemetry.logs.TraceIds"}},
    "formatters": {
        "console": {
            "format": "%(levelname)s [%(name)s] [trace_id=%(trace_id)s span_id=%(span_id)s] "
            "%(message)s"
        }
    },
    "handlers": {
        "console": {
            "class": "logging.StreamHandler",
            "filters": ["trace_ids"],
            "formatter": "console",
        }
    },
    "root": {"handlers": ["console"], "level": env.str("LOG_LEVEL", default="INFO")},
    # pgserver logs every process start and exit at INFO; httpx and httpx2 (the MCP and
    # OpenAI clients) every request, and the MCP SDK every session it opens and every
    # request its server handles: a line to format and write per call, on the hot path.
    "loggers": {
        "pgserver": {"level": "WARNING"},
        "httpx": {"level": "WARNING"},
        "httpx2": {"level": "WARNING"},
        "mcp": {"level": "WARNING"},
    },
}
