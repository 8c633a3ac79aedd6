"""Who may do what: workspaces and their settings, users, members, invitations, roles and the
permission catalog, API keys, access tokens, credentials and admission, rate limits."""
