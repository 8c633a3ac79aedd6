"""Speech customisation: a workspace's vocabulary (the terms its calls name, each a written form
and its spoken forms) and its speech filter (masks of profanity and personal data), which the
speech server applies to its transcripts and the calls package to stored transcripts."""
