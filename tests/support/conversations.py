"""A chat-completions responder for conversations (simulations, chat sessions, judges): it tells
the request of each side by its system message and answers each with its own script, whatever
order concurrent workers ask in.

    sides = Sides(agent=["Hello, how can I help?", "Booked. Goodbye!"],
                  caller=[{"message": "A table for two", "endCall": False}])
    llm.respond(sides)

A side's script is a list (used in order, the last repeated) or a function of the request body;
an int answers that HTTP error status. ``sides.asked[side]`` keeps the bodies each side was sent.
"""
from __future__ import annotations

import threading

CALLER_MARK = "You play a caller phoning a voice agent"
EXTRACT_MARK = "Read the call transcript and fill in the structured data"


class Sides:
    def __init__(self, *, agent=None, caller=None, judge=None, extract=None) -> None:
        self.scripts = {"agent": agent, "caller": caller, "judge": judge, "extract": extract}
        self.used = {side: 0 for side in self.scripts}
        self.asked: dict[str, list[dict]] = {side: [] for side in self.scripts}
        self._lock = threading.Lock()

    @staticmethod
    def side_of(body: dict) -> str:
        system = next((m.get("content") or "" for m in body.get("messages", []) if m.get("role") == "system"), "")
        if system.startswith(CALLER_MARK):
            return "caller"
        if system.startswith(EXTRACT_MARK):
            return "extract"
        if "response_format" in body:
            return "judge"  # the only other structured answer a conversation asks for
        return "agent"

    def __call__(self, body: dict):
        side = self.side_of(body)
        with self._lock:
            self.asked[side].append(body)
            script = self.scripts[side]
            if script is None:
                raise AssertionError(f"the {side} side was asked, but the test scripted none")
            if callable(script):
                return script(body)
            answer = script[min(self.used[side], len(script) - 1)]
            self.used[side] += 1
            return answer
