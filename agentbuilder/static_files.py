"""WhiteNoise as a middleware Django can call on the event loop.

WhiteNoise's middleware is sync only, so under ASGI Django ran it, and every middleware
above it, in the request's thread, and that thread stayed blocked (in asgiref's
`CurrentThreadExecutor`) until the view returned: a thread held per request in flight, and
with request threads shared (agentbuilder.request_threads), other requests queued behind
it. The lookup itself is a dict read (a stat of the file with autorefresh, in DEBUG), so
the async path does it on the loop and hands every other request straight on.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable
from typing import Any

from asgiref.sync import iscoroutinefunction, markcoroutinefunction
from django.http import HttpRequest, HttpResponseBase
from whitenoise.middleware import WhiteNoiseMiddleware


class StaticFilesMiddleware(WhiteNoiseMiddleware):
    sync_capable = True
    async_capable = True

    def __init__(self, get_response: Callable[[HttpRequest], Any]) -> None:
        super().__init__(get_response)
        self.is_async = iscoroutinefunction(get_response)
        if self.is_async:
            markcoroutinefunction(self)

    def __call__(self, request: HttpRequest) -> Any:
        if self.is_async:
            return self._acall(request)
        return super().__call__(request)

    async def _acall(self, request: HttpRequest) -> HttpResponseBase:
        if self.autorefresh:
            static_file = self.find_file(request.path_info)
        else:
            static_file = self.files.get(request.path_info)
        if static_file is not None:
            response: HttpResponseBase = self.serve(static_file, request)
            return response
        awaited: Awaitable[HttpResponseBase] = self.get_response(request)
        return await awaited
