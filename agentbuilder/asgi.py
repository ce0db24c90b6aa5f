import os

from django.core.asgi import get_asgi_application

from agentbuilder.asgi_body import BodyLength

os.environ.setdefault("DJANGO_SETTINGS_MODULE", "agentbuilder.settings")

# Chunked bodies are read (and oversized ones refused) before Django sees the request.
application = BodyLength(get_asgi_application())
