"""A small local HTTP server that answers POST /v1/chat/completions as an OpenAI-compatible
endpoint does, scripted by each test: the JSON content to answer, an HTTP error, a delay, content
that is not JSON, a body that is no chat completion. It records each request (its JSON body and
Authorization header) so that a test can check what was asked.

    with ChatCompletionsServer() as llm:
        llm.answer({"solutions": [...]})        # the next request gets this content
        llm.fail(401)                            # the one after, a 401
        settings = {"llm_base_url": llm.base_url, "llm_api_key": "sk-test"}

Answers are used in order; once the script runs out, the last one is repeated. Where requests come
from several workers at once (a simulation's agent and caller sides, judges), a script in order
cannot say which request gets which answer: ``respond(fn)`` answers each request with
``fn(body)`` instead (content, or an int for an HTTP error status).

Each answer's usage counts words: the prompt's (every message's content) and the content's, so
that a test can add them up.
"""
from __future__ import annotations

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class ChatCompletionsServer:
    def __init__(self) -> None:
        self.requests: list[dict] = []
        self.errors: list[Exception] = []
        self._script: list[tuple] = []
        self._last: tuple = ("status", 500, {"error": {"message": "nothing scripted"}})
        self._responder = None
        self._lock = threading.Lock()
        server = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                raw = self.rfile.read(length)
                try:
                    body = json.loads(raw)
                except ValueError:
                    body = None
                step = server._next({"path": self.path, "body": body,
                                     "authorization": self.headers.get("Authorization")})
                if self.path.rstrip("/") != "/v1/chat/completions":
                    self._send(404, {"error": {"message": "not found"}})
                    return
                kind = step[0]
                if kind == "respond":
                    try:
                        answer = step[1](body or {})
                    except Exception as exc:  # a test's responder that breaks: an error the test sees
                        answer = 500
                        server.errors.append(exc)
                    if isinstance(answer, int):
                        step = ("status", answer, {"error": {"message": "scripted failure", "type": "test"}})
                    else:
                        step = ("content", answer if isinstance(answer, str) else json.dumps(answer))
                    kind = step[0]
                if kind == "delay":
                    time.sleep(step[1])
                    step = step[2]
                    kind = step[0]
                if kind == "content":
                    self._send(200, _completion(step[1], body or {}))
                elif kind == "status":
                    self._send(step[1], step[2])
                elif kind == "raw":
                    self._send_bytes(200, step[1])

            def _send(self, status: int, payload) -> None:
                self._send_bytes(status, json.dumps(payload).encode())

            def _send_bytes(self, status: int, data: bytes) -> None:
                try:
                    self.send_response(status)
                    self.send_header("Content-Type", "application/json")
                    self.send_header("Content-Length", str(len(data)))
                    self.end_headers()
                    self.wfile.write(data)
                except (BrokenPipeError, ConnectionResetError):
                    pass  # the client gave up waiting (a timeout under test)

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self._http.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self._http.server_address[1]}/v1"
        self._thread = threading.Thread(target=self._http.serve_forever, daemon=True)

    def _next(self, request: dict) -> tuple:
        with self._lock:
            self.requests.append(request)
            if self._responder is not None:
                return ("respond", self._responder)
            if self._script:
                self._last = self._script.pop(0)
            return self._last

    # --- the script ---------------------------------------------------------------------------

    def answer(self, content) -> None:
        """Content of the next answer: a dict or list is sent as its JSON text, a str as it is."""
        text = content if isinstance(content, str) else json.dumps(content)
        with self._lock:
            self._script.append(("content", text))

    def respond(self, fn) -> None:
        """Every request from now on answered by ``fn(body)``: content (a dict or list is sent as
        its JSON text, a str as it is) or an int, an HTTP error status."""
        with self._lock:
            self._responder = fn

    def fail(self, status: int, message: str = "scripted failure") -> None:
        with self._lock:
            self._script.append(("status", status, {"error": {"message": message, "type": "test", "code": None}}))

    def garbage(self, body: bytes = b"<html>not an API</html>") -> None:
        """A 200 whose body is not a chat completion."""
        with self._lock:
            self._script.append(("raw", body))

    def slow(self, seconds: float, content) -> None:
        """The next answer after ``seconds``."""
        text = content if isinstance(content, str) else json.dumps(content)
        with self._lock:
            self._script.append(("delay", seconds, ("content", text)))

    def prompts(self) -> list[str]:
        """The user message of each request, in order."""
        return [m["content"] for r in self.requests if r["body"] for m in r["body"].get("messages", [])
                if m.get("role") == "user"]

    # --- life ---------------------------------------------------------------------------------

    def __enter__(self) -> ChatCompletionsServer:
        self._thread.start()
        return self

    def __exit__(self, *exc) -> None:
        self._http.shutdown()
        self._http.server_close()


def words(text) -> int:
    return len(text.split()) if isinstance(text, str) else 0


def _completion(content: str, body: dict) -> dict:
    messages = body.get("messages") if isinstance(body.get("messages"), list) else []
    prompt = sum(words(m.get("content")) for m in messages if isinstance(m, dict))
    completion = words(content)
    return {"id": "chatcmpl-test", "object": "chat.completion", "created": int(time.time()),
            "model": body.get("model", "test-model"),
            "choices": [{"index": 0, "finish_reason": "stop",
                         "message": {"role": "assistant", "content": content, "refusal": None}}],
            "usage": {"prompt_tokens": prompt, "completion_tokens": completion, "total_tokens": prompt + completion}}
