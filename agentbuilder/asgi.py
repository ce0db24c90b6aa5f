import os
from typing import Any

from django.conf import settings
from django.core.asgi import get_asgi_application

from agentbuilder.asgi_body import BodyLength
from agentbuilder.request_threads import RequestThreads

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentbuilder.settings")

django_application = get_asgi_application()

# Imported once Django is set up: the MCP server's handlers use the ORM.
from agents.api.mcp_asgi import endpoint as mcp_endpoint  # noqa: E402
from agents.api.mcp_asgi import is_mcp_path  # noqa: E402


# Any: Django's handler and the MCP SDK (Starlette) each type ASGI's arguments their own way.
async def route(scope: Any, receive: Any, send: Any) -> None:
    """`/v1/mcp` to the MCP SDK's transport (agents.api.mcp_asgi), the rest to Django."""
    if scope["type"] == "http" and is_mcp_path(scope["path"]):
        await mcp_endpoint(scope, receive, send)
        return
    await django_application(scope, receive, send)


# Chunked bodies are read (and oversized ones refused) before Django sees the request; its
# sync work runs on REQUEST_THREADS shared threads, not a thread per request in flight.
application = BodyLength(RequestThreads(route, settings.REQUEST_THREADS))

# Renew this process's leases and sweep dead processes' runs and documents, from the first
# request on (agentbuilder.liveness): with the lifespan off there is no start-up event.
from django.core.signals import request_started  # noqa: E402

from agentbuilder import liveness  # noqa: E402

request_started.connect(liveness.start_on_request, dispatch_uid="liveness")
