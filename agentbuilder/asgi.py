import os

from django.core.asgi import get_asgi_application

from agentbuilder.asgi_body import BodyLength

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentbuilder.settings")

# Chunked bodies are read (and oversized ones refused) before Django sees the request.
application = BodyLength(get_asgi_application())

# Renew this process's leases and sweep dead processes' runs and documents, from the first
# request on (agentbuilder.liveness): with the lifespan off there is no start-up event.
from django.core.signals import request_started  # noqa: E402

from agentbuilder import liveness  # noqa: E402

request_started.connect(liveness.start_on_request, dispatch_uid="liveness")
