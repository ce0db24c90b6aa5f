"""The image's build context, checked where Docker is absent: .dockerignore must let in what
the image runs and keep out the virtualenv, the live database, git and any .env."""

from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from tests.dockerignore import build_context, compile_pattern, files_under, read_patterns

ROOT = Path(__file__).resolve().parent.parent
DOCKERFILE = ROOT / "docker" / "Dockerfile"
APPS = ("agentbuilder", "agents", "guardrails", "retrieval")
# What a developer's checkout holds beside the tracked files.
LOCAL_FILES = {
    ".venv/pyvenv.cfg",
    ".venv/lib/python3.11/site-packages/django/__init__.py",
    "var/pgdata/PG_VERSION",
    "var/pgdata/base/1/1259",
    "var/secret_key",
    "var/static/admin/css/base.css",
    ".git/HEAD",
    ".git/objects/pack/pack-1.pack",
    ".env",
    "docker/.env",
    "agents/.env",
    "agents/.env.local",
    "agents/__pycache__/models.cpython-311.pyc",
    "retrieval/search.pyc",
    ".mypy_cache/3.11/agents/models.meta.json",
}


def excluded_by(patterns: list[str], path: str) -> bool:
    return path not in build_context("\n".join(patterns), [path])


@pytest.mark.parametrize(
    ("patterns", "path", "out"),
    [
        (["*"], "manage.py", True),
        (["*"], "agents/models.py", True),  # through its parent directory
        (["*.pyc"], "x.pyc", True),
        (["*.pyc"], "agents/x.pyc", False),  # `*` stops at a slash (in git it would not)
        (["**/*.pyc"], "x.pyc", True),
        (["**/*.pyc"], "agents/runtime/x.pyc", True),
        (["docs"], "docs/a/b.md", True),
        (["docs", "!docs/keep.md"], "docs/keep.md", False),
        (["docs/", "!docs/keep.md"], "docs/other.md", True),
        (["*", "!agents/"], "agents/runtime/engine.py", False),
        (["*", "!agents", "**/__pycache__"], "agents/__pycache__/x.pyc", True),
        (["!keep.py", "*.py"], "keep.py", True),  # the last match decides
        (["*.py", "!keep.py"], "keep.py", False),
        (["dir/**"], "dir", False),
        (["dir/**"], "dir/a/b", True),
        (["/var"], "var/pgdata/PG_VERSION", True),
        (["./var/../var/"], "var/secret_key", True),
        (["a?c"], "abc", True),
        (["a?c"], "a/c", False),
        (["a[b-d]e"], "ace", True),
        (["a[^b-d]e"], "ace", False),
        (["abc.def"], "abcxdef", False),  # regular-expression characters are literal
        (["a(b)c+"], "a(b)c+", True),
        (["a\\*b"], "a*b", True),
        (["a\\*b"], "axb", False),
        (["**/.env"], ".env", True),
        (["**/.env"], "docker/.env", True),
        (["**/.env"], "x.env", False),
        (["**"], "any/path/at/all", True),
        (["**/dir2/*"], "dir/dir2/file", True),
        (["a**/*.txt"], "a/b/c/file.txt", True),
        (["a/*.txt"], "a/b/file.txt", False),
    ],
)
def test_dockerignore_patterns_match_as_docker_matches_them(
    patterns: list[str], path: str, out: bool
) -> None:
    assert excluded_by(patterns, path) is out


def test_dockerignore_lines_are_read_as_docker_reads_them() -> None:
    text = "\ufeff# a comment\n  /var/ \n\n! keep \n #not a comment\n./a/../b/*.py\n"

    assert read_patterns(text) == ["var", "!keep", "#not a comment", "b/*.py"]


@pytest.mark.parametrize("pattern", ["!", "a[", "[^bc", "[]a]", "[x-]", "[a-b-c]", "a\\"])
def test_a_malformed_pattern_is_an_error(pattern: str) -> None:
    with pytest.raises(ValueError, match="pattern"):
        compile_pattern(pattern)


@pytest.fixture(scope="module")
def context() -> set[str]:
    checkout = files_under(ROOT, skip=(".venv", "var", ".git", ".mypy_cache")) | LOCAL_FILES
    ignore = ROOT / ".dockerignore"
    return build_context(ignore.read_text() if ignore.exists() else "", checkout)


def test_context_keeps_out_the_virtualenv_database_git_and_env_files(context: set[str]) -> None:
    kept_out = (".venv/", "var/", ".git/", ".mypy_cache/", "tests/", "bench/", ".ci/")
    assert [p for p in context if p.startswith(kept_out)] == []
    assert [p for p in context if Path(p).name.startswith(".env")] == []
    assert [p for p in context if "__pycache__" in p or p.endswith(".pyc")] == []


def test_context_holds_the_project_and_everything_in_its_apps(context: set[str]) -> None:
    assert {"manage.py", "requirements.txt", "agentbuilder/settings.py"} <= context
    for app in APPS:
        files = {
            p
            for p in files_under(ROOT / app)
            if "__pycache__" not in p
            and not Path(p).name.startswith(".env")
            and not p.startswith("static_src/")
        }
        assert files, app
        # Data files too: the sample documents, the guardrails' word lists, static files.
        assert {f"{app}/{p}" for p in files} <= context, app


def test_the_config_editor_s_build_sources_stay_out(context: set[str]) -> None:
    # The image serves the bundle in agents/static; npm's packages never reach it.
    assert "agents/static/agents/vendor/config-editor.js" in context
    assert not {p for p in context if p.startswith("agents/static_src/")}


def test_every_file_the_dockerfile_copies_is_in_the_context(context: set[str]) -> None:
    sources = []
    for line in DOCKERFILE.read_text().splitlines():
        if line.startswith("COPY "):
            sources += [s for s in shlex.split(line)[1:-1] if not s.startswith("--")]

    assert "." in sources
    assert {s for s in sources if s != "."} <= context


def test_the_image_runs_gunicorn_with_the_worker_class_of_a_package_it_installs() -> None:
    text = DOCKERFILE.read_text()
    worker = re.search(r'"-k", "([\w.]+)"', text)
    installed = re.findall(r"-r (\S+)", re.search(r"RUN pip install .*", text)[0])
    requirements = "\n".join(
        (ROOT / name).read_text()
        for name in ["requirements.txt", "docker/requirements-deploy.txt"]
        if Path(name).name in installed
    )
    pinned = dict(re.findall(r"^([\w.-]+)==(\S+)", requirements, re.MULTILINE))

    assert worker is not None
    # uvicorn_worker's worker (uvicorn.workers is deprecated) with the platform's HTTP
    # protocol (agentbuilder.serving): a module of the image's own.
    assert worker[1] == "agentbuilder.gunicorn_worker.Worker"
    module = (ROOT / "agentbuilder/gunicorn_worker.py").read_text()
    assert "from uvicorn_worker import UvicornWorker" in module
    assert '"http": "agentbuilder.serving:HttpToolsProtocol"' in module
    assert '"loop": "uvloop"' in module
    assert {"gunicorn", "uvicorn-worker"} <= pinned.keys()
