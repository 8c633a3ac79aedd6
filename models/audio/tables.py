"""The table of the workspace audio library (models.audio)."""
from __future__ import annotations

from peewee import BigIntegerField, CharField, DateTimeField, FloatField, IntegerField, TextField

from models.kernel.db import new_id, utcnow
from models.kernel.scoping import WorkspaceScoped


class AudioFile(WorkspaceScoped):
    """An uploaded audio file; its bytes are at ``path``, removed once the row's deletion commits."""
    id = CharField(primary_key=True, default=new_id)
    name = TextField()
    kind = CharField(max_length=32)  # greeting | hold-music | voicemail-drop | other
    path = TextField()
    content_type = CharField(max_length=64)
    bytes = BigIntegerField()
    format = CharField(max_length=32)  # the container PyAV reads (wav, mp3, flac, ogg, mov,mp4,..., matroska,webm)
    duration_seconds = FloatField()
    sample_rate = IntegerField()
    channels = IntegerField()
    created_by = CharField()
    created_at = DateTimeField(default=utcnow)
    updated_at = DateTimeField(default=utcnow)

    class Meta:
        table_name = "audio_file"
        indexes = (
            # The list's order, newest first, narrowed by kind or not.
            (("workspace", "created_at", "id"), False),
            (("workspace", "kind", "created_at", "id"), False),
        )
