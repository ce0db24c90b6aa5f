"""Agent files that cost far more to read than their size, for the tests of the agent-file
loader and bench/yaml_bombs.py. No Django: the benchmark's parent process imports it."""

from __future__ import annotations

import itertools


def alias_bomb(levels: int = 9) -> str:
    """The billion laughs in YAML: nine aliases of the level before, `levels` times."""
    lines = ["name: bomb", "agentType: tool", "versions:", "- config:"]
    lines.append('    a: &a ["lol","lol","lol","lol","lol","lol","lol","lol","lol"]')
    names = "abcdefghijklmnop"[:levels]
    for previous, name in itertools.pairwise(names):
        lines.append(f"    {name}: &{name} [" + ",".join([f"*{previous}"] * 9) + "]")
    return "\n".join(lines) + "\n"
