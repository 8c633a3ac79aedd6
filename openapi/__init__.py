"""The management API's contract, shipped inside the package: ``management.yaml`` (the root) and
the files it refers to. No Python lives here; the package exists so that an installed copy of
the service finds the contract beside its code (see api.contract)."""
