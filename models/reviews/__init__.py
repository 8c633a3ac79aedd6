"""Reviews: a human review queue over calls (and simulation iterations), scored against a rubric,
from which feedback can be raised."""
