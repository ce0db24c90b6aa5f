"""Documents in the admin, in Chromium: the upload form with two real files, the list until
they are ready, a document's chunks, and the "Try retrieval" page. What each page does over
HTTP is in test_documents.py."""

# ruff: noqa: F811 (pytest fixtures imported from tests/browser.py, named again as parameters)
from __future__ import annotations

from pathlib import Path
from typing import Any

from django.urls import reverse
from selenium.webdriver.support.select import Select

from retrieval.models import Document
from tests.browser import BROWSER, Page, browser_server, chrome, page  # noqa: F401 (fixtures)

HANDBOOK = "Employees get twenty five days of paid vacation. Requests go to the line manager."
TRAVEL = "# Travel\n\nBook trains for trips under four hours. Flights need approval."


def ready_count(page: Page) -> int | None:
    """The number of ready documents once the list shows no pending one, else None."""
    page.driver.refresh()
    if page.find_all(".doc-status-pending"):
        return None
    return len(page.find_all(".doc-status-ready"))


@BROWSER
def test_upload_two_files_see_their_chunks_and_try_retrieval(
    page: Page, admin_user: Any, env: Any, tmp_path: Path
) -> None:
    handbook = tmp_path / "handbook.txt"
    handbook.write_text(HANDBOOK)
    travel = tmp_path / "travel.md"
    travel.write_text(TRAVEL)
    page.login(admin_user)

    page.open(reverse("admin:retrieval_document_changelist"))
    page.find(".object-tools a.addlink").click()
    page.wait_for("#document-upload")
    Select(page.find("#id_environment")).select_by_visible_text(env.name)
    page.find("#id_file").send_keys(f"{handbook}\n{travel}")
    page.find("#id_metadata").send_keys('{"team": "hr"}')
    page.shot("documents-upload")
    page.find("#document-upload [type=submit]").click()

    page.wait_for(".messagelist", text="Uploaded 2 documents")
    assert page.wait_until(lambda: ready_count(page), "both documents to be ready") == 2
    page.shot("documents-list")
    assert {d.metadata["team"] for d in Document.objects.all()} == {"hr"}

    page.find("#result_list a[href*='/change/']").click()  # the newest: travel.md
    page.wait_for("#document-chunks h2", text="Chunks (1)")
    assert "Book trains for trips" in page.find("#document-chunks .doc-text").text
    page.shot("documents-page")
    page.driver.execute_script("document.getElementById('document-chunks').scrollIntoView()")
    page.shot("documents-chunks")

    page.open(reverse("admin:retrieval_document_changelist"))
    page.find("a.try-retrieval-link").click()
    page.wait_for("#retrieval-form")
    page.find("#id_query").send_keys("how many vacation days")
    page.find("#id_hxql_query").send_keys("SELECT * FROM SysContent WHERE team = 'hr'")
    page.find("#retrieval-form [type=submit]").click()

    first = page.wait_for(".retrieval-hit")
    assert "handbook.txt" in first.text
    assert float(first.get_attribute("data-score") or 0) > 0
    page.driver.execute_script("document.getElementById('retrieval-hits').scrollIntoView()")
    page.shot("documents-retrieval")

    hxql = page.find("#id_hxql_query")
    hxql.clear()
    hxql.send_keys("SELECT * FROM SysContent WHERE team == 'hr'")
    page.find("#retrieval-form [type=submit]").click()
    page.wait_for(".errorlist", text="at position 36")
    assert not page.find_all(".retrieval-hit")
