"""The tables of reviews: a review of a call (or a simulation iteration) and its assignees
(models.reviews)."""
from __future__ import annotations

from peewee import CharField, DateTimeField, ForeignKeyField, TextField

from models.kernel.db import JSONField, new_id, utcnow
from models.kernel.scoping import WorkspaceScoped


class Review(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)
    target_type = CharField(max_length=32)  # call or simulation_iteration
    target_id = CharField()
    title = TextField(null=True)
    rubric = JSONField()  # [{name, description, min, max}]
    scores = JSONField()  # {criterion name: score}
    notes = TextField(null=True)
    status = CharField(max_length=16)  # pending, in_review, done
    feedback_id = CharField(null=True)  # the feedback raised from it, if any
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)
    completed_at = DateTimeField(null=True)
    completed_by = CharField(null=True)

    class Meta:
        indexes = (
            (("workspace", "created_at", "id"), False),
            (("workspace", "status", "created_at"), False),
            (("workspace", "target_type", "target_id"), False),
        )


class ReviewAssignee(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)
    review = ForeignKeyField(Review, on_delete="CASCADE", backref="+", index=False)
    user_id = CharField()
    assigned_at = DateTimeField(default=utcnow)
    assigned_by = CharField()

    class Meta:
        indexes = (
            (("review", "user_id"), True),
            (("workspace", "user_id"), False),
        )
