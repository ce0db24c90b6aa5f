import os

from django.core.wsgi import get_wsgi_application

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentbuilder.settings")

application = get_wsgi_application()

# Renew this process's leases and sweep dead processes' runs and documents, from the first
# request on (agentbuilder.liveness): there may be no lifespan event to start on.
from django.core.signals import request_started  # noqa: E402

from agentbuilder import liveness  # noqa: E402

request_started.connect(liveness.start_on_request, dispatch_uid="liveness")
