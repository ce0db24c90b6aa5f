"""A run's lifecycle, one job a module: the typed request (`request`), the runtime spec built
from the database (`spec`, `mcp`), the run opened (`start`), its events streamed and
recorded (`stream`, `record`) and kept alive while it runs (`leases`)."""
