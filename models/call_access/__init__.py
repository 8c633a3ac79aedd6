"""Call access without a member's credential: single-use web-call tokens and share links of calls."""
