"""The fake MCP server's fixtures (tests/fakes/mcp.py) for every test here; each test starts
with an empty listing cache."""

from tests.fakes.mcp import fresh_cache, live, loopback, own_live

__all__ = ["fresh_cache", "live", "loopback", "own_live"]
