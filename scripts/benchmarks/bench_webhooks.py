"""Outbound webhooks on PostgreSQL: events delivered per second, and the delay from a report's
ingest to the first delivery attempt of its event.

  receiver  an HTTP server in this process (ThreadingHTTPServer on 127.0.0.1) that answers 200 at
            once and notes when each webhook-id first arrived; its own ceiling is measured first
            (--events POSTs from 8 threads, no server in between) and printed beside the results
  server    `python -m api.serve` with STT_ENABLED=false, WEBHOOK_ALLOW_HTTP and
            WEBHOOK_ALLOW_PRIVATE_ADDRESSES on (the receiver is local), rate limits that are never
            reached, on a scratch database made on the server of --postgres-url and dropped afterwards
  rate      for each --workers (default 1,2: WORKERS, each process with WEBHOOK_WORKERS=--threads,
            default 2, the service's default): --events (default 3,000) reports ingested through
            the API while no process delivers (WEBHOOK_WORKERS=0), then a server that delivers is
            started; events/s = events / (last first-arrival - first first-arrival)
  delay     the same server, idle: --samples (default 200) reports one at a time, 50 ms apart; the
            delay is from sending the report (before its commit, so an upper bound) to the first
            arrival of its event; p50/p99. "same process": the report lands on a process whose
            workers are woken by its commit; "other process": it lands on a process that delivers
            nothing (WEBHOOK_WORKERS=0) beside one that does, which finds it by polling (every 0.5 s).
            Goal: p99 under 1 s when idle

    scripts/bench_webhooks [--events 3000] [--workers 1,2] [--threads 2] [--samples 200]
                           [--postgres-url URL]
"""
from __future__ import annotations

import json
import sys
import threading
import time
import uuid
from concurrent.futures import ThreadPoolExecutor
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

import httpx

from . import options
from .harness import (
    CLEANUP,
    Server,
    bootstrap,
    free_port,
    log,
    percentile,
    scratch_dir,
    scratch_postgres,
    service_env,
    wait_ready,
)


class Receiver:
    def __init__(self) -> None:
        self.first_seen: dict[str, float] = {}
        self.call_of: dict[str, str] = {}
        self.lock = threading.Lock()
        self.arrived = threading.Condition(self.lock)
        receiver = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body go out at once, not 40 ms apart

            def log_message(self, *args):
                pass

            def do_POST(self):
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                now = time.monotonic()
                message_id = self.headers.get("webhook-id", "")
                with receiver.arrived:
                    if message_id not in receiver.first_seen:
                        receiver.first_seen[message_id] = now
                        try:
                            receiver.call_of[json.loads(body).get("callId", "")] = message_id
                        except ValueError:
                            pass
                    receiver.arrived.notify_all()
                self.send_response(200)
                self.send_header("Content-Length", "2")
                self.end_headers()
                self.wfile.write(b"ok")

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        threading.Thread(target=self.server.serve_forever, daemon=True).start()
        CLEANUP.push(self.server.shutdown)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/hook"

    def reset(self) -> None:
        with self.lock:
            self.first_seen.clear()
            self.call_of.clear()

    def wait_for(self, count: int, timeout_s: float) -> None:
        deadline = time.monotonic() + timeout_s
        with self.arrived:
            while len(self.first_seen) < count:
                if not self.arrived.wait(max(0.0, deadline - time.monotonic())) and time.monotonic() > deadline:
                    raise RuntimeError(f"{len(self.first_seen)} of {count} events arrived within {timeout_s:.0f} s")


def report(workspace_id: str) -> dict:
    return {"type": "end-of-call-report", "callId": str(uuid.uuid4()), "workspaceId": workspace_id,
            "durationMs": 200000, "status": "completed", "customer": "+14155550123",
            "startedAt": "2026-11-23T09:00:00Z", "endedAt": "2026-11-23T09:03:20Z",
            "summary": "The customer asked for the balance of invoice 1042.", "endedReason": "customer-ended-call",
            "transcript": "AI: Hello, this is Acme billing. " * 30}


def start(env: dict, work, **settings) -> tuple[Server, str]:
    port = free_port()
    server = Server([sys.executable, "-m", "api.serve"], {**env, "API_PORT": str(port), **{
        k: str(v) for k, v in settings.items()}}, work / f"server-{port}.log")
    url = f"http://127.0.0.1:{port}"
    wait_ready(server, url + "/api/v2/openapi.json")
    return server, url


def ingest_all(url: str, owner: dict, reports: list[dict], concurrency: int = 8) -> None:
    headers = {"Authorization": f"Bearer {owner['token']}"}

    def send(chunk):
        with httpx.Client(headers=headers, params={"workspaceId": owner["workspaceId"]}, timeout=30) as client:
            for body in chunk:
                r = client.post(url + "/api/v2/webhooks/end-of-call-report", json=body)
                if r.status_code != 200:
                    raise RuntimeError(f"ingest answered {r.status_code}: {r.text}")

    with ThreadPoolExecutor(concurrency) as pool:
        list(pool.map(send, [reports[i::concurrency] for i in range(concurrency)]))


def receiver_ceiling(receiver: Receiver, count: int) -> float:
    receiver.reset()
    started = time.monotonic()

    def send(n):
        with httpx.Client(timeout=10) as client:
            for i in range(n, count, 8):
                client.post(receiver.url, content=b"{}", headers={"webhook-id": f"ceiling-{i}"})

    with ThreadPoolExecutor(8) as pool:
        list(pool.map(send, range(8)))
    rate = count / (time.monotonic() - started)
    receiver.reset()
    return rate


def main(argv=None) -> None:
    parser = options.parser("bench_webhooks", __doc__, options.workers([1, 2]), options.postgres())
    parser.add_argument("--events", type=int, default=3000)
    parser.add_argument("--threads", type=int, default=2)
    parser.add_argument("--samples", type=int, default=200)
    args = parser.parse_args(argv)
    receiver = Receiver()
    work = scratch_dir("bench_webhooks_")
    log(f"receiver ceiling: {args.events} POSTs from 8 threads")
    ceiling = receiver_ceiling(receiver, args.events)
    rows = []
    for workers in args.workers:
        database = scratch_postgres(args.postgres_url, f"bench_webhooks_{workers}")
        env = service_env(DATABASE_URL=database, STT_ENABLED="false", LOG_LEVEL="WARNING",
                          WEBHOOK_ALLOW_HTTP="true", WEBHOOK_ALLOW_PRIVATE_ADDRESSES="true",
                          SECRET_KEY="bench key", DATA_DIR=str(scratch_dir("data_", work)))
        owner = bootstrap(env)
        headers = {"Authorization": f"Bearer {owner['token']}"}
        quiet, quiet_url = start(env, work, WORKERS=2, WEBHOOK_WORKERS=0)
        made = httpx.post(quiet_url + "/api/v2/webhooks/subscriptions", params={"workspaceId": owner["workspaceId"]},
                          headers=headers, json={"url": receiver.url, "events": ["end-of-call-report"]}, timeout=10)
        made.raise_for_status()
        log(f"{workers} worker(s): ingesting {args.events} reports with no process delivering")
        receiver.reset()
        ingest_all(quiet_url, owner, [report(owner["workspaceId"]) for _ in range(args.events)])
        log(f"{workers} worker(s): delivering")
        server, url = start(env, work, WORKERS=workers, WEBHOOK_WORKERS=args.threads)
        receiver.wait_for(args.events, 600)
        arrivals = sorted(receiver.first_seen.values())
        rate = (len(arrivals) - 1) / (arrivals[-1] - arrivals[0])
        delays = {}
        for where, target in (("same process", url), ("other process", quiet_url)):
            log(f"{workers} worker(s): {args.samples} reports one at a time, received by the {where}")
            receiver.reset()
            samples = []
            with httpx.Client(headers=headers, params={"workspaceId": owner["workspaceId"]}, timeout=30) as client:
                for _ in range(args.samples):
                    body = report(owner["workspaceId"])
                    sent = time.monotonic()
                    client.post(target + "/api/v2/webhooks/end-of-call-report", json=body).raise_for_status()
                    deadline = time.monotonic() + 10
                    with receiver.arrived:
                        while body["callId"] not in receiver.call_of and time.monotonic() < deadline:
                            receiver.arrived.wait(0.5)
                        arrived = receiver.first_seen.get(receiver.call_of.get(body["callId"], ""))
                    if arrived is None:
                        raise RuntimeError("an event did not arrive within 10 s")
                    samples.append((arrived - sent) * 1000)
                    time.sleep(0.05)
            delays[where] = samples
        rows.append((workers, rate, delays))
        server.stop()
        quiet.stop()
    print(f"\nReceiver alone: {ceiling:.0f} POSTs/s from 8 threads.\n")
    print("| WORKERS | events/s | delay p50 ms (same process) | p99 | delay p50 ms (other process) | p99 |")
    print("|---:|---:|---:|---:|---:|---:|")
    for workers, rate, delays in rows:
        same, other = delays["same process"], delays["other process"]
        print(f"| {workers} | {rate:.0f} | {percentile(same, 50):.1f} | {percentile(same, 99):.1f} | "
              f"{percentile(other, 50):.1f} | {percentile(other, 99):.1f} |")


if __name__ == "__main__":
    with CLEANUP.guard():
        main()
