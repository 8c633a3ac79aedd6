"""Versioned configurations: agents and workflows (entities), their versions and branches, the
configuration schemas (schemas), diff and three-way merge (diff), and the references between them."""
