"""The tables of the workspace audio library (models.audio): the files, and their transcriptions."""
from __future__ import annotations

from peewee import BigIntegerField, CharField, DateTimeField, FloatField, ForeignKeyField, IntegerField, TextField

from models.kernel.db import JSONField, new_id, utcnow
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


class AudioTranscription(WorkspaceScoped):
    """The transcript of an audio file by the project's own engine, requested on demand, and the
    leased job that makes it (models.audio.transcription): one per file, gone with the file."""
    audio = ForeignKeyField(AudioFile, primary_key=True, on_delete="CASCADE", backref="+")
    status = CharField(max_length=16)  # queued | running | succeeded | failed
    attempts = IntegerField(default=0)
    # A running job whose lease ran out (its process died) is taken again by another worker.
    lease_until = DateTimeField(null=True)
    error = TextField(null=True)
    text = TextField(null=True)
    words = JSONField(null=True)  # [{word, start, end, confidence}], as a call's recording transcript
    language = CharField(max_length=32, null=True)
    duration_seconds = FloatField(null=True)  # of the audio transcribed
    requested_by = CharField()
    created_at = DateTimeField(default=utcnow)  # when this run was requested
    updated_at = DateTimeField(default=utcnow)
    finished_at = DateTimeField(null=True)

    class Meta:
        table_name = "audio_transcription"
        # The claim's: queued rows, and running ones whose lease ran out.
        indexes = ((("status", "lease_until"), False),)
