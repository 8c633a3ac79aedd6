"""Knowledge bases: articles an agent's runtime searches during a call."""
