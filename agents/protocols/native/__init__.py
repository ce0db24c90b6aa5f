"""The native protocol (docs/api.md#invoke): invoke, invoke-stream, invoke-task,
invoke-task-stream."""
