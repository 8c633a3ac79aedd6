"""What the tests share that is not a fixture: clients, servers, data factories, fixtures' texts.
Test modules import from here, never from one another (tests/test_layout.py checks it)."""
