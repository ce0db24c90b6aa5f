"""The audit log (SPEC 8, docs/api.md#audit-log): an append-only record of each change to the
objects it lists, written by their services in the change's own transaction."""
