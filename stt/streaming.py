"""The streaming confirmation policy (LocalAgreement-2), independent of any socket.

Interface (the WebSocket layer relies on exactly this):

    session = StreamingTranscriber(transcriber)      # one per stream; transcriber: stt.engine.Transcriber
    session.add_audio(samples)     # 16 kHz mono float32; called on the event loop while a pass may run
    session.due()                  # True when a pass should start now (enough new audio since the last)
    update = session.step()        # one pass, blocking (run it in an engine thread): Update(final, partial)
    result = session.finish()      # after eof, blocking: Result(text, word_confidences, language)

Update.final is the text of the words newly confirmed by this pass ("" if none); Update.partial
the unconfirmed tail. The concatenation of every final (joined by spaces) is a prefix of
Result.text, and a final is never taken back.
"""
