"""Simulations on PostgreSQL: conversations per minute that the simulation workers hold against a
local chat-completions endpoint answering in --latency-ms (default 50 ms).

  endpoint  an HTTP server in this process (a thread per request) that sleeps --latency-ms, then
            answers as an OpenAI-compatible endpoint: the agent side a sentence, the caller side
            (a persona) a JSON turn that hangs up at its --caller-turns-th turn (default 3). So a
            conversation is the first message, then 3 caller and 3 agent turns: 5 requests to the
            endpoint (the persona's opening line is its first turn, said without one), plus one
            judge per judge assertion (--judges, default 1) and the rules of 2 more assertions
  data      a scratch database on the server of --postgres-url (dropped afterwards): one workspace,
            an agent, a persona, a suite of 3 assertions assigned to the agent, one simulation of
            --conversations (default 200) conversations per level
  workers   the API process's simulation worker threads (SIMULATION_WORKERS), for each of
            --workers (default 1,4): the simulation's wall time from its creation to its last
            conversation stored, conversations per minute, requests to the endpoint per second,
            the ideal (every worker always waiting on the endpoint: workers x 60 s / (requests per
            conversation x latency)), and the baseline measured in the same run: as many threads
            sending the same number of requests per conversation straight to the endpoint (one
            kept-alive connection each, no database, no engine), with our ratio to it

A Markdown table on stdout, progress on stderr.

    scripts/bench_simulations [--conversations 200] [--workers 1,4] [--latency-ms 50] [--postgres-url URL]
"""
from __future__ import annotations

import json
import os
import socket
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

from . import options
from .harness import CLEANUP, csv_ints, log, scratch_dir, scratch_postgres

CALLER_MARK = "You play a caller phoning a voice agent"


class Endpoint:
    """An OpenAI-compatible chat-completions endpoint that answers after ``latency_s``."""

    def __init__(self, latency_s: float, caller_turns: int) -> None:
        self.requests = 0
        lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, *args) -> None:
                pass

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers.get("Content-Length") or 0)))
                with lock:
                    outer.requests += 1
                time.sleep(latency_s)
                messages = body.get("messages", [])
                system = messages[0]["content"] if messages else ""
                if system.startswith(CALLER_MARK):
                    said = sum(1 for m in messages if m["role"] == "assistant")
                    content = json.dumps({"message": "I would like Tuesday at nine, please.",
                                          "endCall": said + 1 >= caller_turns})
                elif "response_format" in body:
                    content = json.dumps({"passed": True, "reason": "The agent was polite."})
                else:
                    content = "Certainly, Tuesday at nine is free. Shall I book it for you?"
                data = json.dumps({"id": "b", "object": "chat.completion", "created": 0, "model": "bench",
                                   "choices": [{"index": 0, "finish_reason": "stop",
                                                "message": {"role": "assistant", "content": content}}],
                                   "usage": {"prompt_tokens": 100, "completion_tokens": 12,
                                             "total_tokens": 112}}).encode()
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base_url = f"http://127.0.0.1:{self.server.server_address[1]}/v1"
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        CLEANUP.push(self.server.shutdown)


def main(argv=None) -> None:
    parser = options.parser("bench_simulations", __doc__, options.postgres())
    parser.add_argument("--conversations", type=int, default=200)
    parser.add_argument("--workers", type=csv_ints, default=[1, 4])
    parser.add_argument("--latency-ms", type=float, default=50.0)
    parser.add_argument("--caller-turns", type=int, default=3)
    parser.add_argument("--judges", type=int, default=1, choices=(0, 1))
    args = parser.parse_args(argv)
    os.environ["LOG_LEVEL"] = "WARNING"
    with CLEANUP.guard():
        endpoint = Endpoint(args.latency_ms / 1000, args.caller_turns)
        work = scratch_dir("bench-simulations-")
        url = scratch_postgres(args.postgres_url, f"bench_simulations_{os.getpid()}")
        settings, owner, agent, persona, suite = _world(url, work, endpoint)
        rows = []
        for workers in args.workers:
            rows.append(_level(settings, owner, agent, persona, suite, workers, args, endpoint))
        print(f"Endpoint latency {args.latency_ms:g} ms; {args.conversations} conversations per level; "
              f"PostgreSQL; this machine: {os.cpu_count()} cores.\n")
        print("| workers | wall s | conversations/min | requests/conversation | bare endpoint conversations/min | "
              "ratio to bare | ideal conversations/min | failed |\n|---:|---:|---:|---:|---:|---:|---:|---:|")
        for row in rows:
            print("| " + " | ".join(row) + " |")


def _world(url: str, work, endpoint: Endpoint):
    import dataclasses

    from core.boot import boot
    from core.settings import Settings
    from models.assertions import assignments, assertions, suites
    from models.kernel.db import session
    from models.personas import personas
    from tests.support import factories
    settings = Settings(database_url=url, data_dir=str(work), transcription_workers=0, webhook_workers=0,
                        optimization_workers=0, retention_interval_s=0, log_level="WARNING",
                        llm_base_url=endpoint.base_url, llm_api_key="bench", llm_model="bench", llm_timeout_s=30)
    boot(settings)
    owner = factories.workspace("Bench")
    agent = factories.agent(owner, "Booker", config={"prompt": "You book appointments.",
                                                     "firstMessage": "Clinic, hello!", "endCallPhrases": ["goodbye"]})
    principal = factories.principal(owner)
    with session():
        persona = personas.create_persona(principal, workspace_id=owner.workspace_id, name="Bench caller",
                                          goal="Book Tuesday at nine", opening_line="Hi, I need an appointment.").id
        suite = suites.create(principal, workspace_id=owner.workspace_id, name="Bench suite").id
        for name, kind, params in (("Mentions Tuesday", "contains", {"text": "tuesday"}),
                                   ("Short", "max-turns", {"max": 20}),
                                   ("Polite", "judge", {"rubric": "The agent is polite."})):
            assertions.create(principal, workspace_id=owner.workspace_id, suite_id=suite, name=name, kind=kind,
                              params=params)
        assignments.assign(principal, workspace_id=owner.workspace_id, suite_id=suite, entity_type="agent",
                           entity_id=agent)
    return dataclasses.replace(settings), owner, agent, persona, suite


def _level(settings, owner, agent, persona, suite, workers: int, args, endpoint: Endpoint) -> list[str]:
    import dataclasses

    from api.simulation_worker import SimulationWorkers
    from models.kernel.db import session
    from models.simulations import simulations
    from models.simulations.simulations import Callers
    from tests.support import factories
    suite_ids = [suite] if args.judges else []
    with session():
        record = simulations.create(factories.principal(owner), workspace_id=owner.workspace_id,
                                    name=f"{workers} workers", entity_type="agent", entity_id=agent, version_id=None,
                                    callers=Callers([persona], [], None), conversations=min(20, args.conversations),
                                    max_turns=20, suite_ids=suite_ids)
    # More conversations than one simulation's 20 per persona: more simulations, created before the clock starts.
    ids = [record.id]
    while sum(20 for _ in ids) < args.conversations:
        with session():
            ids.append(simulations.create(factories.principal(owner), workspace_id=owner.workspace_id,
                                          name=f"{workers} workers", entity_type="agent", entity_id=agent,
                                          version_id=None, callers=Callers([persona], [], None), conversations=20,
                                          max_turns=20, suite_ids=suite_ids).id)
    total = 0
    with session():
        total = sum(simulations.get(workspace_id=owner.workspace_id, simulation_id=i).iteration_count for i in ids)
    before = endpoint.requests
    pool = SimulationWorkers(dataclasses.replace(settings, simulation_workers=workers))
    log(f"{workers} workers: {total} conversations")
    start = time.perf_counter()
    pool.start()
    try:
        while True:
            with session():
                states = [simulations.get(workspace_id=owner.workspace_id, simulation_id=i) for i in ids]
            if all(s.status in simulations.FINISHED for s in states):
                break
            time.sleep(0.05)
    finally:
        wall = time.perf_counter() - start
        pool.stop()
    failed = sum(s.failed_count for s in states)
    requests = (endpoint.requests - before) / total
    per_min = total / wall * 60
    ideal = workers * 60 / (requests * args.latency_ms / 1000)
    bare = _bare(endpoint, workers, round(requests * total))
    bare_per_min = total / bare * 60
    return [str(workers), f"{wall:.1f}", f"{per_min:.0f}", f"{requests:.1f}", f"{bare_per_min:.0f}",
            f"{per_min / bare_per_min:.2f}", f"{ideal:.0f}", str(failed)]


def _bare(endpoint: Endpoint, workers: int, requests: int) -> float:
    """Seconds for ``workers`` threads to send ``requests`` agent requests in all to the endpoint,
    each thread over one kept-alive connection: the floor the simulation's own work sits on."""
    import http.client
    from urllib.parse import urlparse
    url = urlparse(endpoint.base_url)
    body = json.dumps({"model": "bench", "messages": [{"role": "system", "content": "You book appointments."},
                                                      {"role": "user", "content": "Tuesday?"}]}).encode()

    def send(count: int) -> None:
        conn = http.client.HTTPConnection(url.hostname, url.port, timeout=30)
        conn.connect()
        # Headers and body go out in two writes: without this, a delayed ACK holds the body ~40 ms.
        conn.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        for _ in range(count):
            conn.request("POST", url.path + "/chat/completions", body, {"Content-Type": "application/json"})
            conn.getresponse().read()
        conn.close()

    shares = [requests // workers + (1 if i < requests % workers else 0) for i in range(workers)]
    threads = [threading.Thread(target=send, args=(share,)) for share in shares]
    start = time.perf_counter()
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    return time.perf_counter() - start
