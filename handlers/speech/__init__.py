"""Speech customisation: the vocabulary (custom abbreviations) and the speech filter's preview."""
