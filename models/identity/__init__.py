"""Who may do what: workspaces and their settings, users, members and the work assigned to them,
invitations, roles and the permission catalog, API keys, access tokens, credentials and admission,
rate limits."""
