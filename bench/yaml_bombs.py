"""What hostile agent files cost `manage.py agents import` to read: CPU and peak memory of
each, with the agent-file loader (agents/config_files/documents.py) and, for comparison,
with a plain SafeLoader followed by `json.dumps` (what storing a config does to its data).

    .venv/bin/python bench/yaml_bombs.py

No database, no server. Each case runs in a child process of its own (peak RSS is the
child's `ru_maxrss`), under an address-space cap of 1.5 GiB so that the plain loader's
bombs end in MemoryError instead of taking the machine. Prints figures; asserts nothing
about time; exits 1 if the agent-file loader accepts a case it must refuse.
"""

from __future__ import annotations

import json
import os
import resource
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))
CAP = 3 * 512 * 1024 * 1024  # bytes of address space a child may map

from tests.agents.config_files.bombs import alias_bomb  # noqa: E402


def realistic(size: int) -> str:
    """An --all-versions export of a tool agent with long prompts, about `size` bytes."""
    prompt = "".join(
        f"    Rule {n}: answer in plain words, cite the tool you used.\n" for n in range(40)
    )
    version = (
        "- versionLabel: ''\n  notes: ''\n  config:\n    llmModelId: local.demo-v1\n"
        "    systemPrompt: |\n" + prompt.replace("    ", "      ") + "    tools:\n"
        "    - toolType: function\n      name: multiply\n      description: Multiplies\n"
        "      funcName: multiply\n"
    )
    count = max(1, size // len(version))
    return "name: big\nagentType: tool\nversions:\n" + version * count


CASES: dict[str, Callable[[], str]] = {
    "alias bomb, 8 levels": lambda: alias_bomb(8),
    "alias bomb, 9 levels": lambda: alias_bomb(9),
    "100 KB of [": lambda: "[" * 100_000,
    "1 MB of [": lambda: "[" * 1_000_000,
    "realistic export, 1 MiB": lambda: realistic(1024 * 1024),
    "realistic export, 4 MiB": lambda: realistic(4 * 1024 * 1024 - 4096),
}


def child(case: str, loader: str) -> None:
    resource.setrlimit(resource.RLIMIT_AS, (CAP, CAP))
    os.environ["DJANGO_SETTINGS_MODULE"] = "tests.settings"
    import django

    django.setup()
    import yaml

    from agents.config_files.documents import FileRefused, yaml_load

    text = CASES[case]()
    start = time.process_time()
    try:
        data = yaml_load(text) if loader == "agent files" else yaml.safe_load(text)
        json.dumps(data)  # what storing the config does to its data
        outcome = "read"
    except FileRefused as exc:
        outcome = f"refused: {exc}"
    except MemoryError:
        outcome = f"MemoryError (over {CAP >> 20} MiB)"
    except RecursionError:
        outcome = "RecursionError"
    cpu = time.process_time() - start
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(json.dumps({"bytes": len(text.encode()), "cpu": cpu, "peak": peak, "outcome": outcome}))


def main() -> int:
    wrong = 0
    print(f"{'case':28} {'loader':12} {'bytes':>9} {'CPU s':>7} {'peak MiB':>9}  outcome")
    for case in CASES:
        for loader in ("plain", "agent files"):
            run = subprocess.run(  # noqa: S603 - this script, with a case name
                [sys.executable, __file__, "--child", case, loader],
                capture_output=True,
                text=True,
                check=False,
            )
            lines = run.stdout.strip().splitlines()
            if not lines:
                print(f"{case:28} {loader:12} died: {run.stderr.strip().splitlines()[-1:]}")
                continue
            figures = json.loads(lines[-1])
            print(
                f"{case:28} {loader:12} {figures['bytes']:>9} {figures['cpu']:>7.3f} "
                f"{figures['peak']:>9.0f}  {figures['outcome'][:70]}"
            )
            must_refuse = not case.startswith("realistic")
            if loader == "agent files" and must_refuse != figures["outcome"].startswith("refused"):
                wrong += 1
    return 1 if wrong else 0


if __name__ == "__main__":
    if sys.argv[1:2] == ["--child"]:
        child(sys.argv[2], sys.argv[3])
    else:
        sys.exit(main())
