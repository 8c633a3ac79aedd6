"""The demo page in headless Chromium against the real speech server: the fake microphone plays
the JFK recording into the page's capture, and the live display and the final result are checked."""
from __future__ import annotations

import itertools
import math
import time
import wave
from pathlib import Path

import numpy as np
import pytest

from tests.support.skips import skip_or_fail
from tests.support.speech import FIXTURES, JFK, words

CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")

# Records every value the live elements take, which polling from the test could miss.
_WATCH = """
window.seen = {partials: [], finals: []};
for (const [id, list] of [["partial", seen.partials], ["final", seen.finals]]) {
  new MutationObserver(() => list.push(document.getElementById(id).textContent))
    .observe(document.getElementById(id), {childList: true, characterData: true, subtree: true});
}
"""

_SNAPSHOT = """
const text = (id) => document.getElementById(id).textContent;
return {final: text("final"), partial: text("partial"), result: text("result"), error: text("error"),
        status: text("status"), meta: text("result-meta"), done: window.sttDone === true,
        stats: window.sttStats, seen: window.seen || null, message: window.sttResult,
        scored: [...document.querySelectorAll("#result .w")].map(
          (w) => ({word: w.textContent, title: w.title, confidence: Number(w.dataset.confidence)}))};
"""


def in_order(reference: list[str], heard: list[str]) -> float:
    """Share of the reference words found in ``heard`` in the same order (longest common subsequence)."""
    previous = [0] * (len(heard) + 1)
    for r in reference:
        current = [0]
        for j, h in enumerate(heard, 1):
            current.append(previous[j - 1] + 1 if r == h else max(previous[j], current[j - 1]))
        previous = current
    return previous[-1] / len(reference)


@pytest.fixture(scope="module")
def microphone(tmp_path_factory) -> str:
    """The recording plus trailing silence, played once (Chromium would otherwise loop it)."""
    with wave.open(str(FIXTURES / "jfk.wav")) as source:
        rate, channels = source.getframerate(), source.getnchannels()
        samples = np.frombuffer(source.readframes(source.getnframes()), "<i2").reshape(-1, channels)
    padded = np.concatenate([samples, np.zeros((2 * rate, channels), "<i2")])
    path = tmp_path_factory.mktemp("microphone") / "jfk-padded.wav"
    with wave.open(str(path), "wb") as out:
        out.setnchannels(channels)
        out.setsampwidth(2)
        out.setframerate(rate)
        out.writeframes(padded.tobytes())
    return f"{path}%noloop"


@pytest.fixture(scope="module", autouse=True)
def requirements():
    """Checked first, so that without a browser no speech server is started for nothing."""
    missing = [str(p) for p in (CHROMIUM, CHROMEDRIVER) if not p.is_file()]
    if missing:
        skip_or_fail(f"the browser test needs Debian's Chromium and its driver ({', '.join(missing)} missing): "
                     "apt-get install chromium chromium-driver")
    try:
        import selenium  # noqa: F401
    except ImportError:
        skip_or_fail("the browser test needs selenium (pip install -e '.[test]')")


@pytest.fixture(scope="module")
def browser(tmp_path_factory, microphone):
    from selenium import webdriver
    from selenium.webdriver.chrome.options import Options
    from selenium.webdriver.chrome.service import Service

    options = Options()
    options.binary_location = str(CHROMIUM)
    for argument in ("--headless=new", "--no-sandbox", "--disable-gpu", "--window-size=1000,900",
                     "--use-fake-ui-for-media-stream", "--use-fake-device-for-media-stream",
                     f"--use-file-for-fake-audio-capture={microphone}",
                     "--disable-background-networking", "--disable-component-update", "--disable-sync",
                     "--no-first-run", "--disable-quic",
                     f"--user-data-dir={tmp_path_factory.mktemp('chromium-profile')}"):
        options.add_argument(argument)
    # With the driver given, nothing is looked up or downloaded; offline makes sure of it.
    with pytest.MonkeyPatch.context() as env:
        env.setenv("SE_OFFLINE", "true")
        env.setenv("SE_AVOID_STATS", "true")
        driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_script_timeout(10)
    yield driver
    driver.quit()


def settled(reference: list[str], quiet: float = 2.0, stalled: float = 20.0):
    """True once the live text (confirmed plus tentative) covers 80% of ``reference`` in order and
    has not changed for ``quiet`` seconds (the recording is over and the server has caught up), or
    has not changed for ``stalled`` seconds whatever it says."""
    last = {"text": None, "since": 0.0}

    def check(snapshot: dict) -> bool:
        if snapshot["error"]:
            return True
        text = f"{snapshot['final']} {snapshot['partial']}"
        if text != last["text"]:
            last.update(text=text, since=time.monotonic())
        unchanged = time.monotonic() - last["since"]
        return unchanged >= stalled or (in_order(reference, words(text)) >= 0.8 and unchanged >= quiet)

    return check


def wait_for(driver, condition, timeout: float, what: str) -> dict:
    deadline = time.monotonic() + timeout
    while True:
        snapshot = driver.execute_script(_SNAPSHOT)
        if condition(snapshot):
            return snapshot
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout:.0f} s waiting for {what}; page: {snapshot}")
        time.sleep(0.25)


@pytest.fixture
def page(browser, tmp_path):
    """The browser; a screenshot of the page as the test left it goes beside the test's files."""
    yield browser
    browser.save_screenshot(str(tmp_path / "demo.png"))


def test_microphone_speech_is_transcribed_live_then_finalised(stt, page):
    from selenium.webdriver.common.by import By

    page.get(f"{stt.url}/demo?token={stt.token}")
    assert "token" not in page.current_url, "the page should drop the token from its address"
    assert page.find_element(By.ID, "server").get_attribute("value") == stt.url
    page.execute_script(_WATCH)
    reference = words(JFK)

    page.find_element(By.ID, "start").click()
    live = wait_for(page, settled(reference), 90, "the live text to cover 80% of the reference and settle")
    assert not live["error"]
    assert in_order(reference, words(f"{live['final']} {live['partial']}")) >= 0.8, \
        f"the live text stopped short of the reference: {live['final']!r} + {live['partial']!r}"
    assert live["stats"]["capture"] == "audioworklet"
    assert live["stats"]["chunks"] > 10
    # Words still in flux when speech ends stay tentative until eof, so only some need be confirmed.
    assert live["stats"]["finals"] >= 1 and words(live["final"]), "no words were confirmed while speaking"
    assert any(text.strip() for text in live["seen"]["partials"]), "no tentative text was ever shown"
    finals = [text for text in live["seen"]["finals"] if text]
    assert all(later.startswith(earlier) for earlier, later in itertools.pairwise(finals)), \
        f"confirmed text must only grow: {finals}"

    page.find_element(By.ID, "stop").click()
    done = wait_for(page, lambda s: s["done"] or s["error"], 60, "the result after Stop")
    assert not done["error"]
    assert done["status"] == "Done."
    assert done["partial"] == ""
    message = done["message"]
    assert done["result"] == message["text"]
    result = words(done["result"])
    assert in_order(reference, result) >= 0.9 and abs(len(result) - len(reference)) <= 2, done["result"]
    assert result[:len(words(done["final"]))] == words(done["final"]), "the result should extend the confirmed text"
    assert f"Language: {message['language']}".lower() in done["meta"].lower()

    # Every scored word is shown, in order, with its confidence on hover.
    sent = message["word_confidences"]
    assert [w["word"] for w in done["scored"]] == [w["word"].strip() for w in sent]
    for shown, scored in zip(done["scored"], sent):
        assert shown["confidence"] == pytest.approx(scored["confidence"], abs=1e-3)
        assert shown["title"] == f"confidence {math.floor(scored['confidence'] * 100 + 0.5)}%"
    assert page.find_element(By.ID, "start").is_enabled() and not page.find_element(By.ID, "stop").is_enabled()


def test_a_refused_token_is_explained(stt, page):
    from selenium.webdriver.common.by import By

    page.get(f"{stt.url}/demo?token=not-a-key")
    page.find_element(By.ID, "start").click()
    refused = wait_for(page, lambda s: s["error"], 20, "the refusal to be shown")
    assert "401" in refused["error"], refused["error"]
    assert not refused["done"] and refused["final"] == ""
    assert page.find_element(By.ID, "start").is_enabled()
