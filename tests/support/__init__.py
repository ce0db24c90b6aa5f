"""What more than one test module uses: helpers, constants and fixtures, one module per topic.

The fake servers that speak real protocols live in tests/fakes; this package holds the rest
(the scripted provider, the invoke client, the backends, ...). A test module imports from here,
never from another test module (tests/test_layout.py checks it). A fixture defined here is
found by pytest only where it is imported: in a conftest.py for a whole directory, or in the
test module that uses it.
"""
