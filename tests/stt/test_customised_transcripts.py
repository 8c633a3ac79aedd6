"""A transcript with a workspace's vocabulary and speech filter, without a server or a model: its
text, segments and words alike, a rewritten or masked run of words one word timed across the run."""
from __future__ import annotations

from models.speech.customisation import Customisation
from models.speech.filter import SpeechFilter
from models.speech.vocabulary import Vocabulary
from stt.customisation import customised
from stt.engine import Segment, Transcript, Word

WORDS = [Word("Call", 0.9, 0.0, 0.4), Word("acme", 0.8, 0.5, 0.9), Word("pay", 0.7, 1.0, 1.3),
         Word("on", 0.9, 1.4, 1.5), Word("415-555-2671.", 0.6, 1.6, 3.0)]
TEXT = "Call acme pay on 415-555-2671."
HEARD = Transcript(TEXT, "english", 3.0, WORDS, [Segment(0.0, 3.0, TEXT)])


def test_vocabulary_and_masks_reach_text_segments_and_words():
    custom = Customisation(Vocabulary([("Acme Pay", ["acme pay"])]), SpeechFilter({"enabled": True}))
    result = customised(HEARD, custom)
    assert result.text == result.segments[0].text == "Call Acme Pay on [phone]."
    assert result.words == [Word("Call", 0.9, 0.0, 0.4), Word("Acme Pay", 0.7, 0.5, 1.3), Word("on", 0.9, 1.4, 1.5),
                            Word("[phone].", 0.6, 1.6, 3.0)]


def test_without_vocabulary_or_filter_the_transcript_is_itself():
    assert customised(HEARD, Customisation(Vocabulary([]), None)) is HEARD
