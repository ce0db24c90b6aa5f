"""The project's URLs plus `/bench/bare`: a plain async Django view, the baseline that
invoke_overhead compares the invoke route with on the same server."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

from django.http import HttpRequest, HttpResponse, JsonResponse
from django.urls import path
from django.views.decorators.csrf import csrf_exempt

from agentbuilder.urls import handler404, handler500, urlpatterns

__all__ = ["handler404", "handler500", "urlpatterns"]

# A PUT stores the platform's answer to the benchmark's request; each POST then sends the
# same body back (with a fresh id and time, as the platform does), so both move the same bytes.
_answer: dict[str, Any] = {}


@csrf_exempt
async def bare(request: HttpRequest) -> HttpResponse:
    if request.method == "PUT":
        _answer.clear()
        _answer.update(json.loads(request.body))
        return HttpResponse(status=204)
    body = {**_answer, "id": f"resp_{uuid.uuid4().hex}", "createdAt": int(time.time())}
    return JsonResponse(body)


urlpatterns = [path("bench/bare", bare), *urlpatterns]
