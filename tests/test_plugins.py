"""The plug-in registry (agentbuilder.plugins): a name resolves to its dotted path's object,
imported on first lookup and not before; an unknown name or a missing package is the
registry's error, in the words each family's callers read."""

from __future__ import annotations

import subprocess
import sys
import uuid
from collections.abc import Callable, Iterator
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest
from django.core.exceptions import ImproperlyConfigured
from django.test import override_settings

from agentbuilder.plugins import Registry
from agents.llm.registry import PROVIDERS, provider_for
from guardrails.detectors.registry import DETECTORS, detector_for
from guardrails.engines.registry import ENGINES, engine_for
from retrieval.embedders.registry import EMBEDDERS, embedder_for
from retrieval.rerank import RERANKERS, reranker

ROOT = Path(__file__).resolve().parent.parent


@pytest.fixture
def plugins(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimpleNamespace]:
    """A throw-away package of plug-in modules that count their own imports in `loaded`:
    `alpha` and `beta` import cleanly, `gamma` needs a package that is not installed."""
    package = f"plugins_{uuid.uuid4().hex}"
    root = tmp_path / package
    root.mkdir()
    (root / "__init__.py").write_text("loaded = []\n")
    for name in ("alpha", "beta"):
        (root / f"{name}.py").write_text(
            f"from {package} import loaded\nloaded.append({name!r})\n\n"
            f"class Plugin:\n    name = {name!r}\n"
        )
    (root / "gamma.py").write_text("import gammalib_not_installed  # noqa\n\nclass Plugin: ...\n")
    monkeypatch.syspath_prepend(str(tmp_path))
    yield SimpleNamespace(
        package=package,
        paths={name: f"{package}.{name}.Plugin" for name in ("alpha", "beta", "gamma")},
    )
    for module in [m for m in sys.modules if m == package or m.startswith(f"{package}.")]:
        del sys.modules[module]


def loaded(package: str) -> list[str]:
    """The plug-in modules imported so far, in order (none while the package is not)."""
    return list(sys.modules[package].loaded) if package in sys.modules else []


def test_nothing_is_imported_until_its_first_lookup(plugins: SimpleNamespace) -> None:
    widgets: Registry[type[Any]] = Registry("widget", plugins.paths)

    assert f"{plugins.package}.alpha" not in sys.modules
    assert widgets.lookup("alpha").name == "alpha"
    assert loaded(plugins.package) == ["alpha"]  # beta, not asked for, stays unimported
    assert f"{plugins.package}.beta" not in sys.modules


def test_a_second_lookup_imports_nothing_again(plugins: SimpleNamespace) -> None:
    widgets: Registry[type[Any]] = Registry("widget", plugins.paths)

    first = widgets.lookup("alpha")
    assert widgets.lookup("alpha") is first
    assert loaded(plugins.package) == ["alpha"]


def test_an_unknown_name_is_a_lookup_error_without_a_chained_key_error(
    plugins: SimpleNamespace,
) -> None:
    widgets: Registry[type[Any]] = Registry("widget", plugins.paths)

    with pytest.raises(LookupError) as raised:
        widgets.lookup("delta")
    assert str(raised.value) == "unknown widget 'delta'"
    assert raised.value.__cause__ is None
    assert raised.value.__suppress_context__
    assert loaded(plugins.package) == []


def test_the_unknown_name_message_and_error_are_the_familys(plugins: SimpleNamespace) -> None:
    class Misconfigured(Exception):
        pass

    widgets: Registry[type[Any]] = Registry(
        "widget",
        plugins.paths,
        unknown="WIDGET is {name!r}; known: {known}",
        error=Misconfigured,
    )

    with pytest.raises(Misconfigured) as raised:
        widgets.lookup("delta")
    assert str(raised.value) == "WIDGET is 'delta'; known: alpha, beta, gamma"


def test_a_missing_package_names_what_to_install_every_time(plugins: SimpleNamespace) -> None:
    widgets: Registry[type[Any]] = Registry(
        "widget", plugins.paths, packages={"gamma": "gamma-lib"}
    )

    for _ in range(2):  # not remembered: installing the package later is enough
        with pytest.raises(LookupError) as raised:
            widgets.lookup("gamma")
        assert str(raised.value) == (
            "the gamma widget needs the 'gamma-lib' package: "
            "No module named 'gammalib_not_installed'"
        )
        assert isinstance(raised.value.__cause__, ModuleNotFoundError)


def test_a_missing_package_is_named_after_the_plugin_by_default(
    plugins: SimpleNamespace,
) -> None:
    widgets: Registry[type[Any]] = Registry("widget", plugins.paths)

    with pytest.raises(LookupError, match=r"^the gamma widget needs the 'gamma' package: "):
        widgets.lookup("gamma")


def test_names_in_registration_order_and_register_adds_one(plugins: SimpleNamespace) -> None:
    widgets: Registry[type[Any]] = Registry(
        "widget", {"beta": plugins.paths["beta"], "alpha": plugins.paths["alpha"]}
    )
    assert widgets.names() == ("beta", "alpha")
    assert "gamma" not in widgets

    widgets.register("gamma", plugins.paths["gamma"], package="gamma-lib")

    assert list(widgets) == ["beta", "alpha", "gamma"]
    assert ("gamma" in widgets, len(widgets)) == (True, 3)
    with pytest.raises(LookupError, match="needs the 'gamma-lib' package"):
        widgets.lookup("gamma")
    assert loaded(plugins.package) == []  # registering imports nothing either


def test_a_taken_name_cannot_be_registered_again(plugins: SimpleNamespace) -> None:
    widgets: Registry[type[Any]] = Registry("widget", plugins.paths)

    with pytest.raises(ValueError, match="the widget 'alpha' is already registered"):
        widgets.register("alpha", plugins.paths["beta"])
    assert widgets.lookup("alpha").name == "alpha"


# The five tables: every dotted path names something, and each family's unknown-name error
# keeps its type and words.

TABLES: dict[str, Registry[Any]] = {
    "providers": PROVIDERS,
    "engines": ENGINES,
    "detectors": DETECTORS,
    "embedders": EMBEDDERS,
    "rerankers": RERANKERS,
}


@pytest.mark.parametrize(("table", "name"), [(t, n) for t, r in TABLES.items() for n in r])
def test_every_shipped_path_resolves(table: str, name: str) -> None:
    assert callable(TABLES[table].lookup(name))


@override_settings(RERANK_PROVIDER="cohere")
@pytest.mark.parametrize(
    ("ask", "error", "message"),
    [
        (lambda: provider_for("nope"), LookupError, "unknown model provider 'nope'"),
        (
            lambda: engine_for("nope", {}, fail_open=False),
            LookupError,
            "unknown guardrail engine 'nope'",
        ),
        (lambda: detector_for("nope", {}), LookupError, "unknown guardrail detector 'nope'"),
        (
            lambda: embedder_for("nope", dimension=384),
            LookupError,
            "unknown embedding provider 'nope' (known: local, bedrock, openai)",
        ),
        (
            reranker,
            ImproperlyConfigured,
            "RERANK_PROVIDER is 'cohere'; it must be 'local' or 'bedrock'",
        ),
    ],
    ids=list(TABLES),
)
def test_each_familys_unknown_name_error(
    ask: Callable[[], object], error: type[Exception], message: str
) -> None:
    with pytest.raises(error) as raised:
        ask()
    assert type(raised.value) is error
    assert str(raised.value) == message


def test_the_plugins_helper_imports_neither_celery_nor_django() -> None:
    """A detector-only process imports agentbuilder.plugins, and with it the project
    package's __init__: that must stay light."""
    code = (
        "import sys\n"
        "import agentbuilder.plugins\n"
        "leaked = sorted({m.split('.')[0] for m in sys.modules} & {'celery', 'django'})\n"
        "assert not leaked, leaked\n"
        "from agentbuilder import celery_app\n"
        "assert type(celery_app).__name__ == 'Celery', celery_app\n"
    )
    subprocess.run([sys.executable, "-c", code], cwd=ROOT, check=True)  # noqa: S603
