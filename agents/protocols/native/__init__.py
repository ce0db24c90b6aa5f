"""The native protocol (SPEC section 4): invoke, invoke-stream, invoke-task,
invoke-task-stream."""
