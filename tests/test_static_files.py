"""agentbuilder.static_files: WhiteNoise in an async middleware chain serves a static file
itself and hands every other request on, on the event loop (no thread of its own)."""

from __future__ import annotations

import asyncio
import threading
from pathlib import Path

from django.http import FileResponse, HttpRequest, HttpResponse, HttpResponseBase
from django.test import RequestFactory, override_settings

from agentbuilder.static_files import StaticFilesMiddleware

CSS = "/static/agents/playground.css"
SOURCE = Path(__file__).resolve().parent.parent / "agents/static/agents/playground.css"


async def downstream(request: HttpRequest) -> HttpResponse:
    return HttpResponse(f"view {threading.get_ident()}")


def test_async_chain_serves_a_static_file_and_passes_the_rest_on_the_loop() -> None:
    # Finders and autorefresh: the file is found in the app's static folder, as in DEBUG,
    # without collectstatic.
    with override_settings(WHITENOISE_USE_FINDERS=True, WHITENOISE_AUTOREFRESH=True):
        middleware = StaticFilesMiddleware(downstream)
    assert asyncio.iscoroutinefunction(middleware)
    factory = RequestFactory()

    async def both() -> tuple[HttpResponseBase, HttpResponse, int]:
        static = await middleware(factory.get(CSS))
        other = await middleware(factory.get("/v1/agents"))
        return static, other, threading.get_ident()

    static, other, loop_thread = asyncio.run(both())
    assert static.status_code == 200
    assert static["Content-Type"].startswith("text/css")
    assert isinstance(static, FileResponse)
    assert b"".join(static) == SOURCE.read_bytes()  # a FileResponse iterates its file
    assert other.content == f"view {loop_thread}".encode()


def test_sync_chain_still_works() -> None:
    def view(request: HttpRequest) -> HttpResponse:
        return HttpResponse("sync view")

    with override_settings(WHITENOISE_USE_FINDERS=True, WHITENOISE_AUTOREFRESH=True):
        middleware = StaticFilesMiddleware(view)
    assert not asyncio.iscoroutinefunction(middleware)
    assert middleware(RequestFactory().get("/v1/agents")).content == b"sync view"
    assert middleware(RequestFactory().get(CSS)).status_code == 200
