"""Plug-in tables: a name maps to the dotted path of what it names, imported on first lookup.

Each plug-in family (model providers, guardrail engines and detectors, embedders,
rerankers) is one `Registry` in its own package, so a deployment without a provider's SDK
still starts and uses the others, and asking for one it lacks says what to install.
This module imports none of the apps: they hand it their tables as strings.
"""

from __future__ import annotations

import importlib
from collections.abc import Iterator, Mapping
from typing import Generic, TypeVar

T = TypeVar("T")

UNKNOWN = "unknown {kind} '{name}'"
MISSING = "the {name} {kind} needs the '{package}' package: {error}"


class Registry(Generic[T]):
    """Plug-ins of one kind by name; `lookup` imports the one asked for and no other.

    The error messages are templates over `kind`, `name`, `known` (the names, comma
    separated), and for a missing package `package` and `error` (the ImportError), so each
    family keeps the words its callers and admins already read.
    """

    def __init__(
        self,
        kind: str,
        paths: Mapping[str, str],
        *,
        packages: Mapping[str, str] | None = None,
        unknown: str = UNKNOWN,
        missing: str = MISSING,
        error: type[Exception] = LookupError,
    ) -> None:
        self.kind = kind
        self._paths = dict(paths)
        # The package to install, where it is not named like the plug-in.
        self._packages = dict(packages or {})
        self._unknown = unknown
        self._missing = missing
        self._error = error

    def register(self, name: str, path: str, *, package: str | None = None) -> None:
        """Add `name` for the dotted `path`; raises ValueError if `name` is taken."""
        if name in self._paths:
            raise ValueError(f"the {self.kind} '{name}' is already registered")
        self._paths[name] = path
        if package is not None:
            self._packages[name] = package

    def lookup(self, name: str) -> T:
        """What `name` stands for, its module imported now if it was not yet.

        Raises the registry's error (LookupError unless told otherwise) for an unknown
        name, or for a module that cannot be imported, naming the package to install.
        """
        try:
            path = self._paths[name]
        except KeyError:
            raise self._error(self._message(self._unknown, name)) from None
        module, _, attribute = path.rpartition(".")
        try:
            # Not cached here: sys.modules already is, and a test that hides a package
            # must see the import fail again.
            plugin: T = getattr(importlib.import_module(module), attribute)
        except ImportError as exc:
            package = self._packages.get(name, name)
            raise self._error(self._message(self._missing, name, package, exc)) from exc
        return plugin

    def names(self) -> tuple[str, ...]:
        """The registered names, in the order they were registered."""
        return tuple(self._paths)

    def __iter__(self) -> Iterator[str]:
        return iter(self.names())

    def __contains__(self, name: object) -> bool:
        return name in self._paths

    def __len__(self) -> int:
        return len(self._paths)

    def _message(
        self, template: str, name: str, package: str = "", error: ImportError | None = None
    ) -> str:
        return template.format(
            kind=self.kind, name=name, known=", ".join(self._paths), package=package, error=error
        )
