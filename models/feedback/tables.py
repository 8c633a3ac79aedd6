"""The tables of feedback: the feedback, its per-workspace numbering, the workspace's statuses, its
assignees, comments and references (models.feedback)."""
from __future__ import annotations

from peewee import BooleanField, CharField, DateTimeField, ForeignKeyField, IntegerField, TextField

from models.kernel.db import new_id, utcnow
from models.kernel.scoping import Workspace, WorkspaceScoped


class FeedbackCounter(WorkspaceScoped):
    """The last feedback number a workspace gave out: one row per workspace, incremented in the
    transaction that inserts the feedback, so numbers run 1, 2, 3... whatever the concurrency."""
    workspace = ForeignKeyField(Workspace, primary_key=True, on_delete="CASCADE", backref="+")
    last_number = IntegerField()


class FeedbackStatus(WorkspaceScoped):
    """A status of the workspace's feedback, in the order shown; a workspace without rows has the
    defaults (models.feedback.statuses)."""
    id = CharField(primary_key=True, default=new_id)
    name = CharField(max_length=32)
    resolved = BooleanField()  # a feedback in this status counts as resolved
    position = IntegerField()

    class Meta:
        indexes = ((("workspace", "name"), True),)


class Feedback(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)
    number = IntegerField()
    title = TextField()
    description = TextField(null=True)
    severity = IntegerField()
    status = CharField(max_length=32)
    # What it is about: a call (and one message of it), an agent, or a workflow. A call's feedback
    # takes the call's agent; ``entity_type`` says whether agent_id or workflow_id is the subject.
    call_id = CharField(null=True)
    message_id = CharField(null=True)
    entity_type = CharField(max_length=16, null=True)  # agent or workflow
    agent_id = CharField(null=True)
    workflow_id = CharField(null=True)
    # The solution last proposed for it, or that fixed it (models.optimization).
    solution_id = CharField(null=True)
    resolved = BooleanField(default=False)
    resolved_at = DateTimeField(null=True)
    resolved_by = CharField(null=True)
    closed_by_version_id = CharField(null=True)
    is_archived = BooleanField(default=False)
    # Kept in the transaction of every comment added or deleted: exact, and no count per page.
    comments_count = IntegerField(default=0)
    # Where it came from: user, review or simulation; and the user who made it (or whose key did).
    created_by = CharField(max_length=16)
    author_id = CharField()
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = (
            (("workspace", "number"), True),
            (("workspace", "created_at", "id"), False),
            (("workspace", "agent_id", "resolved"), False),
            (("workspace", "workflow_id"), False),
            (("workspace", "call_id"), False),
            (("workspace", "status"), False),
        )


class FeedbackAssignee(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)
    feedback = ForeignKeyField(Feedback, on_delete="CASCADE", backref="+", index=False)
    user_id = CharField()
    assigned_at = DateTimeField(default=utcnow)
    assigned_by = CharField()

    class Meta:
        indexes = (
            (("feedback", "user_id"), True),
            (("workspace", "user_id"), False),
        )


class FeedbackComment(WorkspaceScoped):
    id = CharField(primary_key=True, default=new_id)
    feedback = ForeignKeyField(Feedback, on_delete="CASCADE", backref="+", index=False)
    author_id = CharField()
    body = TextField()
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = ((("feedback", "created_at", "id"), False),)


class FeedbackReference(WorkspaceScoped):
    """A feedback's link to a persona, simulation, call, version, solution or review. The entity
    is stored by kind and id: a kind whose group does not exist yet is kept as given."""
    id = CharField(primary_key=True, default=new_id)
    feedback = ForeignKeyField(Feedback, on_delete="CASCADE", backref="+", index=False)
    entity_type = CharField(max_length=16)
    entity_id = CharField()
    relation = CharField(max_length=32)
    label = TextField(null=True)
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)

    class Meta:
        indexes = (
            (("feedback", "entity_type", "entity_id", "relation"), True),
            (("workspace", "entity_type", "entity_id"), False),
        )
