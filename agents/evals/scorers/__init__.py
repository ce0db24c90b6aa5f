"""The scorers of experiments (docs/api.md#scorers): one module each, pure, and their
registry (`registry`), the one module of the package that reads a table."""
