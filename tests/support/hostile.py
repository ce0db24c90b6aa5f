"""Hypothesis strategies for hostile input: text with NUL, lone surrogates and separators in it,
and any JSON value built from it."""

from __future__ import annotations

from hypothesis import HealthCheck, settings
from hypothesis import strategies as st

# Any JSON text, what a client can put in a body: surrogates and NUL are rare among all code
# points, so they are drawn often on purpose.
HOSTILE = st.sampled_from(["", "\x00", "\ud800", "\udfff", "\ud83d", "\u2028", "\x7f"])
PLAIN = st.text(st.characters(exclude_categories=[]), max_size=6)
ANY_TEXT = st.builds(lambda a, b, c: a + b + c, PLAIN, HOSTILE, PLAIN)
JSON_VALUES = st.recursive(
    st.none() | st.booleans() | st.integers() | st.floats(allow_nan=False) | ANY_TEXT,
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(ANY_TEXT, inner, max_size=4),
    max_leaves=12,
)
PROPERTY = settings(
    max_examples=40,
    derandomize=True,
    deadline=None,
    database=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
