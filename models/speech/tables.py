"""The table of a workspace's vocabulary (models.speech)."""
from __future__ import annotations

from peewee import CharField, DateTimeField, TextField

from models.kernel.db import JSONField, new_id, utcnow
from models.kernel.scoping import WorkspaceScoped


class VocabularyTerm(WorkspaceScoped):
    """A term of the workspace's vocabulary: its written form, unique without regard to case."""
    id = CharField(primary_key=True, default=new_id)
    written = TextField()
    written_key = TextField()  # the written form folded to lower case: unique per workspace, the list's order
    spoken = JSONField()  # the spoken forms, lower case, one space between words
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = (
            (("workspace", "written_key"), True),
        )
