import gc
import os
from typing import Any

from django.conf import settings
from django.core.asgi import get_asgi_application
from django.core.signals import request_started

from agentbuilder import asgi_mounts, beat, liveness, shutdown
from agentbuilder.asgi_body import BodyLength
from agentbuilder.request_threads import RequestThreads

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentbuilder.settings")

django_application = get_asgi_application()

# The apps' own ASGI endpoints (agentbuilder.asgi_mounts: the MCP server's, mounted by the
# agents app), imported once Django is set up: their handlers use the ORM.
mounts = asgi_mounts.endpoints()


async def lifespan(receive: Any, send: Any) -> None:
    """ASGI's lifespan: this process renews its leases and sweeps dead processes' runs and
    documents from start-up (agentbuilder.liveness), so a restarted server closes the runs
    of the one it replaced with no request to wake it. The lifespan runs in each serving
    process (after gunicorn's fork), never in a master whose connections workers would
    inherit. Django's handler has no lifespan of its own to run. Without a broker it also
    runs Celery beat, which fires the schedules (agentbuilder.beat). From start-up a SIGTERM
    lets the live runs finish within SHUTDOWN_GRACE_SECONDS (agentbuilder.shutdown)."""
    while True:
        message = await receive()
        if message["type"] == "lifespan.startup":
            shutdown.watch_signals()  # the server's handlers are in place by now
            liveness.ensure_started()
            beat.ensure_started()
            # What start-up made (Django, the apps, their modules: most of the heap) lives as
            # long as the process: out of the collector's sight, a full collection walks only
            # what requests made. A/B on the experiments' compare page: p95 530 → 360 ms,
            # p50 the same (bench/README.md, 2026-11-29).
            gc.freeze()
            await send({"type": "lifespan.startup.complete"})
        elif message["type"] == "lifespan.shutdown":
            beat.stop()
            await send({"type": "lifespan.shutdown.complete"})
            return


# Any: Django's handler and the MCP SDK (Starlette) each type ASGI's arguments their own way.
async def route(scope: Any, receive: Any, send: Any) -> None:
    """A mounted path (`/v1/mcp`: the MCP SDK's transport, agents.protocols.mcp_server.asgi) to its
    endpoint, the lifespan here, the rest to Django."""
    if scope["type"] == "lifespan":
        await lifespan(receive, send)
        return
    if scope["type"] == "http":
        endpoint = mounts.get(scope["path"].rstrip("/"))
        if endpoint is not None:
            await endpoint(scope, receive, send)
            return
    await django_application(scope, receive, send)


# Chunked bodies are read (and oversized ones refused) before Django sees the request; its
# sync work runs on REQUEST_THREADS shared threads, not a thread per request in flight.
application = BodyLength(RequestThreads(route, settings.REQUEST_THREADS))

# A server run with the lifespan off (`uvicorn --lifespan off`) has no start-up event: it
# starts sweeping at its first request.
request_started.connect(liveness.start_on_request, dispatch_uid="liveness")
