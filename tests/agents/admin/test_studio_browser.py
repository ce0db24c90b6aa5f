"""The agent studio in Chromium: the config editor (agents/static/agents/config_editor.js over
the CodeMirror bundle) on the add and change pages, and the compare page. The endpoints the
editor calls are tested over HTTP in test_config_editor.py and test_compare.py."""

# ruff: noqa: F811 (pytest fixtures imported from tests/browser.py, named again as parameters)
from __future__ import annotations

import json
import re
import time
from collections.abc import Iterator
from typing import Any

import pytest
from django.urls import reverse
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.support.select import Select

from agents.access.permissions import Action, grant
from agents.examples import CALCULATOR, SUMMARIZER
from agents.models import Agent, AgentVersion
from agents.services.config_check import config_validate
from agents.services.versions import version_add
from tests.browser import BROWSER, Page, browser_server, chrome, page  # noqa: F401 (fixtures)
from tests.factories import CALCULATOR_CONFIG
from tests.support.admin import staff_with


@pytest.fixture
def creator(env: Any) -> Any:
    """Staff who may create agents in the default environment, with the admin's model perms."""
    user = staff_with("add_agent", "view_agent")
    grant(user, Action.CREATE, env)
    return user


@pytest.fixture
def themed(page: Page) -> Iterator[Page]:
    """The page, whose colours a test may change with `theme`: the browser forgets them after."""
    yield page
    page.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", {"features": []})
    page.driver.execute_script("localStorage.removeItem('theme')")


def change_page(agent: Agent) -> str:
    return reverse("admin:agents_agent_change", args=[agent.pk])


def editor_ready(page: Page) -> None:
    page.wait_for("div.config-editor[data-ready=true] .cm-editor .cm-content")


def checked(page: Page, problems: int) -> None:
    """Wait until the server's check of the editor's text has found `problems`."""
    page.wait_until(
        lambda: page.find("div.config-editor").get_attribute("data-checked") == str(problems),
        f"the server's check to find {problems} problem(s)",
    )


def shown_type(page: Page) -> str | None:
    return Select(page.find("#id_agent_type")).first_selected_option.get_attribute("value")


def form_config(page: Page) -> Any:
    """The config the form would post: the hidden textarea the editor writes to."""
    return json.loads(page.find("#id_config").get_property("value"))


def type_config(page: Page, text: str) -> None:
    """Replace the editor's text by typing, as a person would: select all, then type. The
    editor closes brackets and quotes, and steps over a closing one typed again, so one line
    of JSON typed in full comes out as it is."""
    select_all(page)
    page.find(".cm-content").send_keys(text)


def select_all(page: Page) -> None:
    page.find(".cm-content").click()
    # Selenium holds a modifier down to the end of the call: Ctrl with "a" only.
    page.find(".cm-content").send_keys(Keys.CONTROL, "a")
    page.wait_for(".cm-selectionBackground")


def texts(page: Page, css: str) -> list[str]:
    return [element.text for element in page.find_all(css)]


def diff_text(page: Page) -> str:
    return page.find("#config-diff").text.replace("\xa0", " ")  # difflib's spaces: &nbsp;


def show(page: Page, css: str) -> None:
    """Scroll `css` to the middle of the window, for a screenshot."""
    page.driver.execute_script("arguments[0].scrollIntoView({block: 'center'})", page.find(css))


@BROWSER
def test_an_agent_added_from_a_template_is_saved_with_the_template_s_config(
    page: Page, creator: Any, env: Any
) -> None:
    page.login(creator)
    page.open(reverse("admin:agents_agent_add"))
    editor_ready(page)
    assert shown_type(page) == "tool"
    assert "multiply" in page.find(".cm-content").text
    assert form_config(page) == CALCULATOR["config"]

    Select(page.find("#config-editor-template")).select_by_value("summarizer")

    assert shown_type(page) == "task"
    page.wait_until(lambda: "inputSchema" in page.find(".cm-content").text, "the summarizer")
    assert "multiply" not in page.find(".cm-content").text
    assert form_config(page) == SUMMARIZER["config"]
    # A person's pause: the editor's own check of this text (600 ms after it) is over, so
    # choosing the environment has to start another.
    time.sleep(1)
    Select(page.find("#id_environment")).select_by_value(str(env.pk))
    checked(page, 0)  # the template passes the save's validation in this environment
    page.find("#id_name").send_keys("summarizer")
    page.find("input[name=_save]").click()

    page.wait_for(".messagelist .success", text="summarizer")
    agent = Agent.objects.get(environment=env, name="summarizer")
    assert agent.agent_type == "task"
    version = AgentVersion.objects.get(agent=agent)
    assert version.number == 1
    assert version.config["systemPrompt"] == SUMMARIZER["config"]["systemPrompt"]
    assert version.config["inputSchema"] == SUMMARIZER["config"]["inputSchema"]
    stored = config_validate(
        user=creator, environment=env, agent_type="task", data=SUMMARIZER["config"], loc=()
    )
    assert version.config == stored


@BROWSER
def test_a_config_error_is_marked_in_the_editor_before_saving_and_keys_are_completed(
    page: Page, admin_user: Any, make_agent: Any
) -> None:
    agent = make_agent("calc", "tool", config=CALCULATOR_CONFIG)
    page.login(admin_user)
    page.open(change_page(agent))
    editor_ready(page)
    checked(page, 0)

    typed = {"llmModelId": "no-such-model", "tools": CALCULATOR_CONFIG["tools"]}
    type_config(page, json.dumps(typed))

    unknown = "llmModelId: unknown model 'no-such-model'"
    page.wait_for("ul.config-editor-problems li", text=unknown)  # the check of all of it
    assert texts(page, "ul.config-editor-problems li") == [unknown]
    marks = page.wait_until(lambda: texts(page, ".cm-lintRange-error"), "the error's mark")
    assert marks == ['"no-such-model"']
    assert page.find_all(".cm-gutter-lint .cm-lint-marker-error")
    assert form_config(page) == typed
    # The long line scrolls inside the editor, which stays in its row, the problems under it.
    editor, row = page.find(".cm-editor"), page.find(".form-row.field-config")
    assert editor.rect["x"] + editor.rect["width"] <= row.rect["x"] + row.rect["width"]
    assert row.get_property("scrollLeft") == 0
    assert abs(page.find("ul.config-editor-problems").rect["x"] - editor.rect["x"]) < 2
    page.find(".cm-content").send_keys(Keys.HOME)  # back to the mark, for the screenshot
    show(page, ".config-editor")
    page.shot("editor-error-mark")

    # A new key in the top object: the keys of the schema not written yet are offered.
    content = page.find(".cm-content")
    content.send_keys(Keys.ESCAPE)  # the function names offered while "multiply" was typed
    page.wait_until(lambda: not page.find_all(".cm-tooltip-autocomplete"), "no completions")
    content.send_keys(Keys.CONTROL, Keys.END)
    content.send_keys(Keys.LEFT, ', "')
    labels = ".cm-tooltip-autocomplete .cm-completionLabel"
    offered = page.wait_until(lambda: texts(page, labels), "completions")
    assert "systemPrompt" in offered
    assert "llmModelId" not in offered  # written already
    show(page, ".config-editor")
    page.shot("editor-completion")
    page.wait_for(".cm-tooltip-autocomplete li", text="systemPrompt").click()
    content.send_keys("Be terse.")
    assert form_config(page) == {**typed, "systemPrompt": "Be terse."}

    assert AgentVersion.objects.filter(agent=agent).count() == 1  # nothing was saved


@BROWSER
def test_the_add_page_chooses_the_only_environment_marks_a_typo_and_keeps_start_from(
    page: Page, creator: Any, env: Any
) -> None:
    page.login(creator)
    page.open(reverse("admin:agents_agent_add"))
    editor_ready(page)
    # The creator's one environment is chosen: nothing to pick before the editor checks.
    assert Select(page.find("#id_environment")).first_selected_option.text == "default"
    assert not page.find(".config-editor-needs").is_displayed()
    checked(page, 0)

    typo = {**CALCULATOR["config"], "systemPromt": "Be terse."}
    type_config(page, json.dumps(typo))

    page.wait_for("ul.config-editor-problems li", text="systemPromt")
    marks = page.wait_until(lambda: texts(page, ".cm-lintRange-error"), "the typo's mark")
    assert marks == ['"systemPromt"']

    # A failed save (a name the service refuses) shows the page again as it was sent.
    Select(page.find("#config-editor-template")).select_by_value("summarizer")
    page.wait_until(lambda: "inputSchema" in page.find(".cm-content").text, "the summarizer")
    page.find("#id_name").send_keys("not a name!")
    page.find("input[name=_save]").click()
    page.wait_for(".errornote")
    editor_ready(page)

    chosen = Select(page.find("#config-editor-template")).first_selected_option
    assert chosen.get_attribute("value") == "summarizer"
    assert shown_type(page) == "task"
    assert form_config(page) == SUMMARIZER["config"]
    assert not Agent.objects.exists()


@BROWSER
def test_two_chosen_versions_are_compared_with_their_changes_highlighted(
    page: Page, admin_user: Any, make_agent: Any
) -> None:
    agent = make_agent("calc", "tool", config=CALCULATOR_CONFIG)
    for prompt in ("Be terse.", "Answer in French."):
        config = {**CALCULATOR_CONFIG, "systemPrompt": prompt}
        version_add(user=admin_user, agent=agent, config=config)
    page.login(admin_user)
    page.open(change_page(agent))

    page.find("a.compare-link").click()
    page.wait_for("h1", text="Compare versions: calc")
    Select(page.find("#compare-a")).select_by_visible_text("v1")
    Select(page.find("#compare-b")).select_by_visible_text("v3")
    page.find("#compare-go").click()

    page.wait_for("h2", text="Config: v1 → v3")
    diff = page.find("#config-diff")
    text = diff_text(page)
    assert "You are a helpful assistant" in text  # difflib wraps the rest of v1's long line
    assert "Answer in French." in text
    assert "Be terse." not in text  # v2 is not compared
    changes = diff.find_elements(By.CSS_SELECTOR, ".diff_chg, .diff_add, .diff_sub")
    assert changes
    assert all(c.value_of_css_property("background-color") != "rgba(0, 0, 0, 0)" for c in changes)
    headers = [th.text for th in diff.find_elements(By.CSS_SELECTOR, "thead th") if th.text]
    assert headers == ["V1", "V3"]
    # difflib's "next change" column is hidden, in the header row too (or it shifts the names)
    assert not any(th.is_displayed() for th in diff.find_elements(By.CSS_SELECTOR, ".diff_next"))
    assert page.path.endswith("?a=1&b=3")  # a link to this comparison
    show(page, "#config-diff")
    page.shot("compare-v1-v3")

    page.open(change_page(agent))
    page.find("#versions-group a[href*='b=3']").click()  # v3's row: "with v2"
    page.wait_for("h2", text="Config: v2 → v3")
    assert "Be terse." in diff_text(page)


def theme(page: Page, chosen: str | None, system: str = "light") -> None:
    """Reload the page with the admin's theme `chosen` (None: "auto", the first) and the
    system's colour scheme `system`."""
    scheme = {"features": [{"name": "prefers-color-scheme", "value": system}]}
    page.driver.execute_cdp_cmd("Emulation.setEmulatedMedia", scheme)
    if chosen is None:
        page.driver.execute_script("localStorage.removeItem('theme')")
    else:
        page.driver.execute_script("localStorage.setItem('theme', arguments[0])", chosen)
    page.driver.refresh()
    editor_ready(page)


def colours(page: Page) -> dict[str, str]:
    """The editor's background, its text's colour, a string's and the selection's."""
    return {
        "background": page.find(".cm-editor").value_of_css_property("background-color"),
        "text": page.find(".cm-editor").value_of_css_property("color"),
        "string": page.find(".cm-content .tok-string").value_of_css_property("color"),
        "selection": page.find(".cm-selectionBackground").value_of_css_property("background-color"),
    }


def luminance(css_colour: str) -> float:
    """WCAG's relative luminance of an `rgb(…)` or `rgba(…)` colour (its alpha ignored)."""
    channels = [float(n) / 255 for n in re.findall(r"[\d.]+", css_colour)[:3]]
    red, green, blue = (
        c / 12.92 if c <= 0.04045 else ((c + 0.055) / 1.055) ** 2.4 for c in channels
    )
    return 0.2126 * red + 0.7152 * green + 0.0722 * blue


def contrast(one: str, other: str) -> float:
    """WCAG's contrast ratio; text wants 4.5 at least."""
    darker, lighter = sorted((luminance(one), luminance(other)))
    return (lighter + 0.05) / (darker + 0.05)


@BROWSER
def test_the_editor_follows_the_admin_s_dark_mode(
    themed: Page, admin_user: Any, make_agent: Any
) -> None:
    page = themed
    agent = make_agent("calc", "tool", config=CALCULATOR_CONFIG)
    page.login(admin_user)
    page.open(change_page(agent))
    editor_ready(page)
    select_all(page)
    light = colours(page)

    theme(page, "dark")

    assert page.driver.execute_script("return document.documentElement.dataset.theme") == "dark"
    select_all(page)
    dark = colours(page)
    show(page, ".config-editor")
    page.shot("editor-dark")
    assert luminance(light["background"]) > 0.8
    assert luminance(dark["background"]) < 0.05
    for shown in (light, dark):
        assert contrast(shown["text"], shown["background"]) >= 4.5, shown
        assert contrast(shown["string"], shown["background"]) >= 4.5, shown
        assert contrast(shown["text"], shown["selection"]) >= 4.5, shown
    theme(page, None, system="dark")  # "auto" follows the system
    assert page.find(".cm-editor").value_of_css_property("background-color") == dark["background"]
    theme(page, "light", system="dark")
    assert page.find(".cm-editor").value_of_css_property("background-color") == light["background"]


@BROWSER
def test_a_version_is_promoted_and_rolled_back_from_the_history(
    page: Page, admin_user: Any, make_agent: Any
) -> None:
    agent = make_agent("Calculator", "tool", config=CALCULATOR["config"])
    for prompt in ("Be terse.", "Be kind."):
        version_add(
            user=admin_user, agent=agent, config={**CALCULATOR["config"], "systemPrompt": prompt}
        )
    page.login(admin_user)
    page.open(change_page(agent))

    # v2's "Promote to…" in the version history, then name the alias.
    page.find("#versions-group a[href$='?version=2']").click()
    page.wait_for("#promote-form")
    assert Select(page.find("#id_version")).first_selected_option.get_attribute("value") == "2"
    page.find("#id_name").send_keys("prod")
    page.find("#promote-go").click()
    page.wait_for("tr[data-alias=prod] .alias-version", text="v2")

    # Promote v3 with the form, then roll back: prod runs v2 again.
    Select(page.find("#id_version")).select_by_value("3")
    page.find("#id_name").send_keys("prod")
    page.find("#promote-go").click()
    page.wait_for("tr[data-alias=prod] .alias-version", text="v3")
    page.find("tr[data-alias=prod] .alias-rollback").click()
    page.wait_for("tr[data-alias=prod] .alias-version", text="v2")

    history = [row.text for row in page.find_all("#alias-history tbody tr")]
    assert [re.findall(r"\((?:new)\)|v\d", row) for row in history] == [
        ["v3", "v2"],
        ["v2", "v3"],
        ["(new)", "v2"],
    ]
    alias = agent.aliases.get(name="prod")
    assert alias.version.number == 2
