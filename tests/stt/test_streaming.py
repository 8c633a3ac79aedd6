"""The streaming confirmation policy: its logic against a scripted engine, then on the real model."""
from __future__ import annotations

import random
import threading
from dataclasses import dataclass

import numpy as np
import pytest

from stt.audio import SAMPLE_RATE
from stt.engine import Segment, Transcript, Word
from stt.scoring import wer
from stt.streaming import StreamingTranscriber, cut_repetition
from tests.support.speech import FIXTURES, JFK, fresh_transcriber, words

SR = SAMPLE_RATE


# --- a scripted engine ---------------------------------------------------------------------------

@dataclass
class Spoken:
    text: str
    start: float  # stream seconds
    end: float


def speech(script: list[Spoken], seconds: float, *, floor: float = 0.0, seed: int = 0) -> np.ndarray:
    """Noise bursts where the script has words, silence (or a low noise floor) elsewhere."""
    rng = np.random.default_rng(seed)
    audio = (rng.standard_normal(int(seconds * SR)) * floor).astype(np.float32)
    for w in script:
        a, b = int(w.start * SR), int(w.end * SR)
        audio[a:b] = (rng.standard_normal(b - a) * 0.2).astype(np.float32)
    return audio


def sentences(*texts: str, word: float = 0.3, gap: float = 0.1, pause: float = 0.6, at: float = 0.5) -> list[Spoken]:
    script, t = [], at
    for text in texts:
        for w in text.split():
            script.append(Spoken(w, t, t + word))
            t += word + gap
        t += pause
    return script


class ScriptedEngine:
    """Stands in for stt.engine.Transcriber. By default it "hears" the scripted words that start in
    the buffer it is given (a word cut by the buffer's end comes out garbled, as a real model's
    would), with the last word of each sentence stretched to the next sentence's start, as whisper's
    token timestamps do; ``hypotheses`` replaces that with fixed answers, call by call."""

    multilingual = False

    def __init__(self, script: list[Spoken] = (), *, hypotheses: list[str] | None = None, edit=None,
                 stretch: bool = True):
        self.script, self.hypotheses, self.edit, self.stretch = list(script), hypotheses, edit, stretch
        self.session: StreamingTranscriber | None = None
        self.calls: list[dict] = []
        self.release: threading.Event | None = None
        self.entered = threading.Event()

    def transcribe(self, samples, *, options):
        self.entered.set()
        if self.release is not None:
            self.release.wait(10)
        offset, seconds = self.session.buffer_start, samples.size / SR
        self.calls.append({"offset": offset, "seconds": seconds, "options": options})
        if self.hypotheses is not None:
            text = self.hypotheses[min(len(self.calls), len(self.hypotheses)) - 1]
            found = [Word(t, 0.9, 0.05 * i, 0.05 * i + 0.04) for i, t in enumerate(text.split())]
        else:
            found = []
            inside = [w for w in self.script if offset - 0.05 <= w.start < offset + seconds]
            for i, w in enumerate(inside):
                end = min(w.end, offset + seconds)
                heard = (offset + seconds - w.start) / (w.end - w.start)
                text = w.text if heard >= 1 else f"{w.text[:max(1, len(w.text) // 2)]}-{heard:.1f}"
                if self.stretch and w.text[-1] in ".?!" and i + 1 < len(inside):
                    end = inside[i + 1].end  # stretched into the next sentence's first word
                found.append(Word(text, round(0.5 + 0.01 * len(self.calls), 2), w.start - offset, end - offset))
        if self.edit:
            found = self.edit(len(self.calls), found)
        text = " ".join(w.word for w in found)
        return Transcript(text, "english", seconds, found, [Segment(0.0, seconds, text)] if found else [])


def session_for(engine: ScriptedEngine, **kwargs) -> StreamingTranscriber:
    session = StreamingTranscriber(engine, **kwargs)
    engine.session = session
    return session


def stream(session: StreamingTranscriber, audio: np.ndarray, chunk: float = 0.1):
    """Feeds ``audio`` in chunks, running a pass whenever one is due; returns the updates and the
    result, after checking the invariants on every update."""
    updates, finals = [], []
    step = int(chunk * SR)
    for i in range(0, audio.size, step):
        session.add_audio(audio[i:i + step])
        if session.due():
            update = session.step()
            updates.append(update)
            if update.final:
                finals.append(update.final)
            assert [w.word for w in session.words] == " ".join(finals).split()
    result = session.finish()
    confirmed = " ".join(finals)
    assert result.text.startswith(confirmed) and (len(result.text) == len(confirmed) or
                                                  result.text[len(confirmed)] == " " or not confirmed)
    assert [c["word"] for c in result.word_confidences] == result.text.split()
    return updates, finals, result


# --- the policy's logic --------------------------------------------------------------------------

def test_the_words_two_hypotheses_agree_on_are_confirmed_once():
    engine = ScriptedEngine(hypotheses=["hello world foo", "Hello, world bar", "hello world bar baz",
                                        "hello world bar baz qux", "hello world bar baz qux"])
    session = session_for(engine)
    voice = np.random.default_rng(1).standard_normal(SR // 2).astype(np.float32) * 0.2
    got = []
    for _ in range(5):
        session.add_audio(voice)
        assert session.due()
        update = session.step()
        got.append((update.final, update.partial))
    assert got == [("", "hello world foo"),
                   ("Hello, world", "bar"),  # as the newer hypothesis spells it
                   ("bar", "baz"), ("baz", "qux"), ("qux", "")]
    assert session.finish().text == "Hello, world bar baz qux"


def test_a_confirmed_word_is_never_taken_back():
    engine = ScriptedEngine(hypotheses=["one two three", "one two three", "one too three four",
                                        "won two tree four five", "one two three four five"])
    session = session_for(engine)
    voice = np.random.default_rng(2).standard_normal(SR // 2).astype(np.float32) * 0.2
    finals = []
    for _ in range(5):
        session.add_audio(voice)
        finals.append(session.step().final)
    assert finals == ["", "one two three", "", "four", "five"]
    assert session.finish().text == "one two three four five"


def test_a_changing_model_never_breaks_the_prefix_invariant():
    script = sentences(*[" ".join(f"w{s}x{i}" for i in range(6)) + "." for s in range(12)])
    rng = random.Random(7)

    def noisy(call, found):
        found = list(found)
        for _ in range(rng.randint(0, 2)):
            if not found:
                break
            i = rng.randrange(len(found))
            kind = rng.random()
            if kind < 0.4:
                found[i] = Word("zz" + found[i].word, found[i].confidence, found[i].start, found[i].end)
            elif kind < 0.7:
                del found[i]
            else:
                found.insert(i, Word("um", 0.3, found[i].start, found[i].start))
        return found

    engine = ScriptedEngine(script, edit=noisy)
    session = session_for(engine)
    updates, finals, result = stream(session, speech(script, script[-1].end + 1.0))
    assert finals and len(" ".join(finals).split()) >= len(script) // 2
    # Random edits slip through where two hypotheses happen to agree on them; the bulk is right.
    assert wer(words(" ".join(w.text for w in script)), words(result.text)) < 0.15


def test_the_buffer_is_cut_in_the_pause_after_a_sentence_and_prompts_with_the_text_before_it():
    texts = ["one two three four.", "five six seven.", "eight nine ten eleven twelve.", "thirteen fourteen.",
             "fifteen sixteen seventeen.", "eighteen nineteen.", "twenty twenty-one twenty-two twenty-three."]
    script = sentences(*texts, pause=0.5)
    engine = ScriptedEngine(script)
    session = session_for(engine, prompt_chars=200)
    gaps = [(a.end, b.start) for a, b in zip(script, script[1:]) if a.text.endswith(".")]
    starts = set()

    updates, finals, result = stream(session, speech(script, script[-1].end + 1.5))
    assert result.text == " ".join(texts)
    for call in engine.calls:
        starts.add(call["offset"])
        before = " ".join(w.text for w in script if w.end <= call["offset"])
        prompt = call["options"].prompt
        # Only text from before the buffer, and all of it that fits.
        assert before.endswith(prompt) and (prompt or not before)
    cuts = sorted(starts - {0.0})
    assert len(cuts) >= 3
    for cut in cuts:
        # Never inside a word: the stretched end of a sentence's last word is not where it ends.
        assert not any(w.start < cut < w.end for w in script), cut
    assert any(a < cut < b for a, b in gaps for cut in cuts)


def test_the_buffer_stays_bounded_without_sentence_ends():
    script = sentences(" ".join(f"w{i}" for i in range(150)), word=0.3, gap=0.1)  # 60 s, no full stop
    engine = ScriptedEngine(script)
    session = session_for(engine, max_buffer=12.0)
    updates, finals, result = stream(session, speech(script, script[-1].end + 1.0))
    assert max(c["seconds"] for c in engine.calls) <= 12.0 + 1.0
    assert words(result.text) == [w.text for w in script]


def test_the_buffer_stays_bounded_without_any_pause():
    script = sentences(" ".join(f"w{i}" for i in range(100)), word=0.4, gap=0.0)  # 40 s, no gap
    engine = ScriptedEngine(script)
    session = session_for(engine, max_buffer=10.0)
    updates, finals, result = stream(session, speech(script, script[-1].end + 1.0))
    assert max(c["seconds"] for c in engine.calls) <= 10.0 + 1.0
    assert words(result.text) == [w.text for w in script]


def test_a_hypothesis_is_cut_at_a_repetition_loop():
    assert cut_repetition("so so so so so".split()) == 1
    assert cut_repetition("i think i think i think you".split()) == 2
    assert cut_repetition("and so my fellow americans".split()) == 5
    assert cut_repetition("no no".split()) == 2
    engine = ScriptedEngine(hypotheses=["and so so so so so so so", "and so so so so so so so so",
                                        "and so my fellow americans", "and so my fellow americans"])
    session = session_for(engine)
    voice = np.random.default_rng(3).standard_normal(SR // 2).astype(np.float32) * 0.2
    session.add_audio(voice)
    assert session.step().partial == "and so"
    session.add_audio(voice)
    assert session.step().final == "and so"
    for _ in range(2):
        session.add_audio(voice)
        session.step()
    assert session.finish().text == "and so my fellow americans"


def test_a_phrase_of_four_words_said_again_at_once_is_a_loop():
    assert cut_repetition("ask what you ask what you".split()) == 6  # three words: kept
    assert cut_repetition("can do for you can do for you".split()) == 4
    assert cut_repetition("your country can do for your country".split()) == 7  # not at once
    # Cut short by the hypothesis's end: half the phrase or more is a copy, less may be speech.
    assert cut_repetition("can do for your country can do for".split()) == 5
    assert cut_repetition("for you ask what you can do".split()) == 7
    assert cut_repetition("can do for you ask what you can do".split()) == 9


def test_a_repeated_tail_after_the_utterance_is_not_confirmed_twice():
    # What a misled engine answers on the pause after an utterance: its last phrase once more,
    # timed over the real words. Without the loop check, two such answers agree and confirm it.
    said = "ask what you can do for your country."
    engine = ScriptedEngine(hypotheses=[said, said, said + " can do for your country.",
                                        said + " can do for your country.", said + " can do for"])
    session = session_for(engine)
    voice = np.random.default_rng(8).standard_normal(SR // 2).astype(np.float32) * 0.2
    finals = []
    for _ in range(5):
        session.add_audio(voice)
        update = session.step()
        finals.append(update.final)
        assert "can do for your country. can" not in update.partial
    assert " ".join(f for f in finals if f) == said
    assert session.finish().text == said


@pytest.mark.parametrize("floor", [0.0, 0.003, 0.02])
def test_silence_gives_no_text_and_does_not_end_the_session(floor):
    engine = ScriptedEngine(hypotheses=["Thank you."])  # what whisper says to silence
    session = session_for(engine)
    rng = np.random.default_rng(4)
    for _ in range(300):  # 30 s
        session.add_audio((rng.standard_normal(SR // 10) * floor).astype(np.float32))
        if session.due():
            update = session.step()
            assert update.final == "" and update.partial == ""
    assert engine.calls == [] and session.words == []
    assert session.buffer_seconds <= 1.0
    # Speech after the silence is still heard.
    engine.hypotheses = ["hello there", "hello there"]
    voice = rng.standard_normal(SR // 2).astype(np.float32) * 0.2
    session.add_audio(voice)
    session.step()
    session.add_audio(voice)
    assert session.step().final == "hello there"
    assert session.finish().text == "hello there"


def test_silence_updates_are_empty():
    engine = ScriptedEngine(hypotheses=["Thank you."])
    session = session_for(engine)
    updates, finals, result = stream(session, np.zeros(30 * SR, dtype=np.float32))
    assert updates and all(u.final == "" and u.partial == "" for u in updates)
    assert result.text == "" and result.word_confidences == [] and result.language == "english"


def test_words_invented_on_trailing_silence_are_dropped():
    script = sentences("ask not what your country can do.")

    def thank_you(call, found):
        # What whisper may add once speech is followed by a second of silence.
        offset, seconds = engine.calls[-1]["offset"], engine.calls[-1]["seconds"]
        if offset + seconds - script[-1].end < 1.0:
            return found
        return found + [Word("Thank", 0.9, seconds - 0.6, seconds - 0.4), Word("you.", 0.9, seconds - 0.4, seconds)]

    engine = ScriptedEngine(script, edit=thank_you)
    session = session_for(engine)
    updates, finals, result = stream(session, speech(script, script[-1].end + 5.0))
    assert result.text == "ask not what your country can do."


def test_passes_are_due_every_interval_and_audio_may_arrive_during_one():
    engine = ScriptedEngine(hypotheses=["hello"])
    session = session_for(engine)
    voice = np.random.default_rng(5).standard_normal(SR // 10).astype(np.float32) * 0.2
    for _ in range(4):
        session.add_audio(voice)
    assert not session.due()
    session.add_audio(voice)
    assert session.due()
    engine.release = threading.Event()
    worker = threading.Thread(target=session.step)
    worker.start()
    assert engine.entered.wait(5)
    for _ in range(6):  # 600 ms while the pass runs
        session.add_audio(voice)
        assert not session.due()
    with pytest.raises(RuntimeError):
        session.step()
    engine.release.set()
    worker.join(5)
    assert session.due() and session.buffer_seconds == pytest.approx(1.1)


def test_confirmed_words_keep_the_confidence_they_had_when_confirmed():
    script = sentences("alpha beta gamma delta epsilon")
    engine = ScriptedEngine(script)
    session = session_for(engine)
    updates, finals, result = stream(session, speech(script, script[-1].end + 0.3))
    confirmed = [w for u in updates for w in u.final_words]
    assert confirmed
    for w, c in zip(confirmed, result.word_confidences):
        assert c == {"word": w.word, "confidence": w.confidence}
    assert len(result.word_confidences) == 5 and all(0 < c["confidence"] <= 1 for c in result.word_confidences)


def test_a_word_is_not_confirmed_while_the_buffer_may_cut_it():
    script = sentences(" ".join(f"w{i}" for i in range(40)), word=0.4, gap=0.0)  # speech without a gap
    engine = ScriptedEngine(script)
    session = session_for(engine)
    audio = speech(script, script[-1].end + 1.0)
    confirmed = 0
    for i in range(0, int(script[-1].end * SR), SR // 10):
        session.add_audio(audio[i:i + SR // 10])
        if session.due():
            update = session.step()
            for w in update.final_words:
                assert w.end <= session.last_pass.stream_seconds - 0.3
            confirmed += len(update.final_words)
    assert confirmed >= 20  # words were confirmed while the speech went on, and each was checked


def test_a_pause_confirms_every_word_of_the_utterance_before_eof():
    # A speaker who stops talking sees every word become final without ending the stream.
    texts = ["ask not what your country can do for you.", "ask what you can do"]
    script = sentences(*texts)
    engine = ScriptedEngine(script)
    session = session_for(engine)
    audio = speech(script, script[-1].end + 3.0)
    step = SR // 10
    for i in range(0, audio.size, step):
        session.add_audio(audio[i:i + step])
        if session.due():
            session.step()
    assert " ".join(w.word for w in session.words) == " ".join(texts)
    assert session.finish().text == " ".join(texts)


def test_a_pause_shorter_than_the_settling_passes_leaves_the_last_words_partial():
    # The other side of the rule: right after the last word, the tail is not final yet.
    script = sentences("ask not what your country can do")
    engine = ScriptedEngine(script)
    session = session_for(engine)
    audio = speech(script, script[-1].end + 0.5)
    step = SR // 10
    update = None
    for i in range(0, audio.size, step):
        session.add_audio(audio[i:i + step])
        if session.due():
            update = session.step()
    assert update is not None and update.partial
    assert len(session.words) < len(script)
    assert session.finish().text == "ask not what your country can do"


# --- on the real model ---------------------------------------------------------------------------

@pytest.fixture
def transcriber(converted_model):
    return fresh_transcriber(converted_model)


@pytest.fixture(scope="module")
def jfk():
    from stt.audio import decode
    return decode(FIXTURES / "jfk.wav")


def test_jfk_streams_to_its_text_with_finals_before_the_end(transcriber, jfk):
    session = StreamingTranscriber(transcriber)
    # A pass whenever one is due, each as if it took no time: faster than real time, same passes.
    updates, finals, result = stream(session, jfk)
    assert words(result.text) == words(JFK)
    assert len(" ".join(finals).split()) >= len(words(JFK)) / 2
    assert result.language == "english"
    assert len(result.word_confidences) == len(result.text.split())
    assert all(0 < c["confidence"] <= 1 for c in result.word_confidences)
    assert all(p.transcribed for p in session.passes)  # the fixture is speech all along


def test_a_pause_confirms_jfk_before_eof_on_the_real_model(transcriber, jfk):
    session = StreamingTranscriber(transcriber)
    audio = np.concatenate([jfk, np.zeros(3 * SR, dtype=np.float32)])
    step = SR // 10
    for i in range(0, audio.size, step):
        session.add_audio(audio[i:i + step])
        if session.due():
            session.step()
    confirmed = " ".join(w.word for w in session.words)
    assert words(confirmed) == words(JFK)
    assert session.finish().text == confirmed


@pytest.mark.slow  # a soak: minutes of audio
def test_a_long_session_costs_per_pass_what_a_short_one_does(transcriber, jfk):
    pause = np.zeros(SR, dtype=np.float32)
    audio = np.concatenate([part for _ in range(10) for part in (jfk, pause)])  # 2 minutes
    # Passes every 2 s of audio: the same policy, fewer passes, so that the test stays short.
    session = StreamingTranscriber(transcriber, interval=2.0)
    updates, finals, result = stream(session, audio)
    buffers = [p.buffer_seconds for p in session.passes if p.transcribed]
    half = len(buffers) // 2
    early, late = buffers[:half], buffers[half:]
    # What a pass costs follows the buffer it transcribes: it must not grow with the session.
    assert max(late) <= max(early) + session.interval, buffers
    assert sum(late) / len(late) <= session.max_buffer, buffers
    assert max(buffers) <= session.max_buffer + session.force_after + session.interval
    assert wer(words(JFK) * 10, words(result.text)) < 0.15


@pytest.mark.parametrize("floor", [0.0, 0.003])
def test_silence_on_the_real_model_gives_nothing(transcriber, floor):
    session = StreamingTranscriber(transcriber)
    audio = (np.random.default_rng(6).standard_normal(30 * SR) * floor).astype(np.float32)
    updates, finals, result = stream(session, audio)
    assert finals == [] and all(u.partial == "" for u in updates)
    assert result.text == "" and result.word_confidences == []
