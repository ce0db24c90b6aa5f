"""Test settings: the project's settings with a test-only secret and the offline model."""

import atexit
import os
import shutil
import tempfile

os.environ.setdefault("SECRET_KEY", "test-only-secret-key-not-for-production")
os.environ.setdefault("LLM_OFFLINE", "true")
os.environ.setdefault("DEBUG", "false")
# Uploads ingested inside the request: a test's rows are invisible to other threads until
# it commits. Tests of the background ingestion turn it on (and commit).
os.environ.setdefault("INGESTION_WORKERS", "0")
# The runner's own process never sweeps: its sweeps would race the tests' rows (a live
# test's request starts the thread otherwise). Server processes the tests start turn it on.
os.environ.setdefault("LIVENESS_THREAD", "false")
# Nor does it run beat: a live test's server would fire schedules under other tests. The
# schedules' tests start it themselves.
os.environ.setdefault("BEAT_EMBEDDED", "false")

# The metrics this process and the servers it starts count (agentbuilder.metrics): in a
# directory of its own, gone with it, not the developer's var/metrics.
if "PROMETHEUS_MULTIPROC_DIR" not in os.environ:
    os.environ["PROMETHEUS_MULTIPROC_DIR"] = tempfile.mkdtemp(prefix="agentbuilder-metrics-")
    atexit.register(shutil.rmtree, os.environ["PROMETHEUS_MULTIPROC_DIR"], ignore_errors=True)

from agentbuilder.settings import *  # noqa: F403

ALLOWED_HOSTS = ["testserver", "localhost", "127.0.0.1"]
# Fast hashing: the suite creates many users and API clients.
PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
STORAGES = {
    "default": {"BACKEND": "django.core.files.storage.FileSystemStorage"},
    "staticfiles": {"BACKEND": "django.contrib.staticfiles.storage.StaticFilesStorage"},
}

# One test database per pytest process: several runs (a developer's and an editor's, or
# parallel sessions) can share the embedded server without dropping each other's database.
DATABASES["default"]["TEST"] = {"NAME": f"test_agentbuilder_{os.getpid()}"}  # noqa: F405

# WhiteNoise scans STATIC_ROOT each time a handler is built (every test client); tests
# never fetch static files, so leave it out.
MIDDLEWARE = [m for m in MIDDLEWARE if m != "agentbuilder.static_files.StaticFilesMiddleware"]  # noqa: F405
