"""The workspace audio library: greetings, hold music and voicemail drops, uploaded as files under
DATA_DIR/audio/<workspace>/ and described by what PyAV reads of them (duration, sample rate,
channels, format)."""
