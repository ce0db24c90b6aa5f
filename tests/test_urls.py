"""Every /v1/ path answers the API's JSON, a path no route matches included."""

from __future__ import annotations

from typing import Any

import pytest
from rest_framework.test import APIClient


@pytest.mark.parametrize("debug", [False, True])
@pytest.mark.parametrize(
    ("method", "path"),
    [
        ("get", "/v1/nothing-here"),
        ("get", "/v1/agents/"),  # APPEND_SLASH's case: a redirect under /v1/ before
        ("post", "/v1/agents/1/versions/latest/unknown"),
        ("delete", "/v1/"),
    ],
)
def test_an_unknown_api_path_is_a_json_404_with_debug_on_too(
    db: Any, settings: Any, debug: bool, method: str, path: str
) -> None:
    settings.DEBUG = debug  # Django's HTML debug page answered these before

    response = getattr(APIClient(), method)(path)

    assert response.status_code == 404
    assert response["Content-Type"] == "application/json"
    assert response.json() == {"detail": "Not found."}


def test_the_admin_keeps_its_pages(db: Any, settings: Any) -> None:
    settings.DEBUG = True

    response = APIClient().get("/admin/agents/nothing-here/")

    assert response.status_code in (302, 404)  # to the login page, or a page
    assert not response["Content-Type"].startswith("application/json")
