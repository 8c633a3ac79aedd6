"""Call access: web-call tokens and share links of calls."""
