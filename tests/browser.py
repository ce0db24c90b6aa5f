"""Browser tests: Debian's headless Chromium, driven by Selenium, against the platform served
in-process on loopback with its static files (the admin's and the apps').

A test module imports the fixtures; a failed test leaves a screenshot of the page, its
source and its console under the test's tmp_path (their paths are in the report):

    from tests.browser import BROWSER, Page, browser_server, chrome, page  # noqa: F401

    @BROWSER
    def test_staff_see_the_admin_index(page: Page, admin_user: Any) -> None:
        page.login(admin_user)
        page.open(reverse("admin:index"))
        page.wait_for("#site-name", text="Django administration")

The browser is one per module (it starts in about a second); `page` forgets the session
after each test. Without Chromium the tests skip, except under CI (the `CI` variable set),
where they fail: .ci/run installs `chromium` and `chromium-driver`. Set BROWSER_SHOTS to a
directory to keep the screenshots tests take with `page.shot(name)`.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any, TypeVar, cast

import pytest
from django.contrib.staticfiles.handlers import ASGIStaticFilesHandler
from django.core.asgi import get_asgi_application
from django.test import override_settings
from django.urls import reverse
from selenium import webdriver
from selenium.common.exceptions import (
    NoSuchElementException,
    StaleElementReferenceException,
    TimeoutException,
    WebDriverException,
)
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.chrome.webdriver import WebDriver
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement
from selenium.webdriver.support.wait import WebDriverWait

from tests.live import live_app, restore_serialized_rows

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
FLAGS = ("--headless=new", "--no-sandbox", "--disable-dev-shm-usage", "--window-size=1280,1000")
WAIT_SECONDS = 15
PASSWORD = "pw"  # tests.factories.UserFactory's

# The server's threads see only committed rows: each test commits, and its flush at the end
# takes the seeds with it, which the serialized rollback puts back.
BROWSER = pytest.mark.django_db(transaction=True, serialized_rollback=True)

T = TypeVar("T")


def browser_missing() -> str | None:
    """Why no browser test can run here, or None."""
    for path, package in ((CHROMIUM, "chromium"), (CHROMEDRIVER, "chromium-driver")):
        if not os.access(path, os.X_OK):
            return f"{path} is missing (CI installs it: apt-get install {package})"
    return None


def chromium() -> WebDriver:
    """A new headless Chromium. The paths are given so Selenium Manager never downloads one."""
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.set_capability("goog:loggingPrefs", {"browser": "ALL"})
    return webdriver.Chrome(service=Service(str(CHROMEDRIVER)), options=options)


class Page:
    """The browser on the live server: open a path, log in, wait for what should show."""

    def __init__(self, driver: WebDriver, base_url: str, evidence: Path) -> None:
        self.driver = driver
        self.base_url = base_url
        self.evidence = evidence

    def open(self, path: str) -> None:
        self.driver.get(self.base_url + path)

    @property
    def path(self) -> str:
        url: str = self.driver.current_url
        return url.removeprefix(self.base_url)

    def login(self, user: Any, password: str = PASSWORD) -> None:
        """Through the admin's login form, as a person would."""
        self.open(reverse("admin:login"))
        self.find("#id_username").send_keys(user.get_username())
        self.find("#id_password").send_keys(password)
        self.find("#login-form [type=submit]").click()
        self.wait_for("#user-tools")

    def find(self, css: str) -> WebElement:
        return self.driver.find_element(By.CSS_SELECTOR, css)

    def find_all(self, css: str) -> list[WebElement]:
        return self.driver.find_elements(By.CSS_SELECTOR, css)

    def wait_until(self, condition: Callable[[], T | None], what: str) -> T:
        """The first truthy value of `condition`, which may look at elements that come and
        go; an AssertionError naming `what` when none comes in time."""

        def probe(_: Any) -> T | None:
            try:
                return condition()
            except (NoSuchElementException, StaleElementReferenceException):
                return None

        try:
            result = WebDriverWait(self.driver, WAIT_SECONDS, poll_frequency=0.05).until(probe)
        except TimeoutException:
            raise AssertionError(f"waited {WAIT_SECONDS} s for {what}") from None
        return cast(T, result)  # `until` returns only a truthy value

    def wait_for(self, css: str, text: str = "") -> WebElement:
        """The first visible element matching `css` (whose text contains `text`)."""

        def shown() -> WebElement | None:
            for element in self.find_all(css):
                if element.is_displayed() and text in element.text:
                    return element
            return None

        return self.wait_until(shown, f"{css!r}" + (f" showing {text!r}" if text else ""))

    def shot(self, name: str) -> None:
        """A screenshot for people to look at, into $BROWSER_SHOTS when it is set."""
        if folder := os.environ.get("BROWSER_SHOTS"):
            Path(folder).mkdir(parents=True, exist_ok=True)
            self.driver.save_screenshot(str(Path(folder) / f"{name}.png"))

    def save_evidence(self) -> list[Path]:
        """The screenshot, the page's source and its console, under the test's tmp_path."""
        shot = self.evidence / "browser.png"
        source = self.evidence / "browser.html"
        console = self.evidence / "browser-console.txt"
        self.driver.save_screenshot(str(shot))
        source.write_text(self.driver.page_source)
        console.write_text("".join(f"{e['level']} {e['message']}\n" for e in self.console()))
        return [shot, source, console]

    def console(self) -> list[dict[str, Any]]:
        """What the page logged to its console (errors, failed loads) since the last call."""
        entries: list[dict[str, Any]] = self.driver.get_log("browser")
        return entries

    def reset(self) -> None:
        """Forget the session and leave the page, for the next test."""
        self.driver.delete_all_cookies()
        self.driver.get("about:blank")


class Evidence:
    """The plugin that saves a failed test's page (the `page` fixture's) and names the files
    in its report. Registered by `chrome`, so test modules need no conftest of their own."""

    name = "browser-evidence"

    @pytest.hookimpl(wrapper=True)
    def pytest_runtest_makereport(self, item: pytest.Item, call: pytest.CallInfo[None]) -> Any:
        report = yield
        opened = getattr(item, "funcargs", {}).get("page")
        if report.when == "call" and report.failed and isinstance(opened, Page):
            try:
                saved = opened.save_evidence()
            except WebDriverException as exc:  # a dead browser: the failure says enough
                report.sections.append(("browser", f"no screenshot: {exc.msg}"))
            else:
                report.sections.append(("browser", "\n".join(str(path) for path in saved)))
        return report


@pytest.fixture(scope="module")
def browser_server(django_db_setup: Any, django_db_blocker: Any) -> Iterator[str]:
    """The platform on 127.0.0.1 with its static files; its base URL. Cookies without
    `Secure`: the test settings run with DEBUG off, and this server speaks plain http."""
    app = ASGIStaticFilesHandler(get_asgi_application())
    plain_http = override_settings(SESSION_COOKIE_SECURE=False, CSRF_COOKIE_SECURE=False)
    with plain_http, live_app(app) as served:
        yield f"http://127.0.0.1:{served.port}"
    restore_serialized_rows(django_db_blocker)


@pytest.fixture(scope="module")
def chrome(pytestconfig: pytest.Config) -> Iterator[WebDriver]:
    if reason := browser_missing():
        if os.environ.get("CI"):
            pytest.fail(f"browser tests cannot run: {reason}", pytrace=False)
        pytest.skip(reason)
    if not pytestconfig.pluginmanager.has_plugin(Evidence.name):
        pytestconfig.pluginmanager.register(Evidence(), Evidence.name)
    driver = chromium()
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def page(chrome: WebDriver, browser_server: str, tmp_path: Path) -> Iterator[Page]:
    opened = Page(chrome, browser_server, tmp_path)
    yield opened
    opened.reset()
