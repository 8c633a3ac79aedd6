"""The kernel every domain builds on: the database and its sessions (db), compiled SQL (sql), pages
(pagination), the workspace and the scoping rule (scoping), domain errors (errors), the text rule
(text), secrets at rest (encryption, secrets) and leased background work (leases)."""
