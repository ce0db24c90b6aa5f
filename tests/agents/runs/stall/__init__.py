"""A test-only app for the server processes of tests/agents/runs: it makes a run's code
stall or lose its record on cue, as a deadlock or a bug would, while the process lives."""
