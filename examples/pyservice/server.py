#!/usr/bin/env python3
"""A small payments API in Python (standard library only) with its own
Idempotency-Key layer, for idembench's black-box mode.

    python3 examples/pyservice/server.py --addr 127.0.0.1:8090 \
        --downstream http://127.0.0.1:9000

POST /payments with {"amount": 100, "currency": "EUR"} and an
Idempotency-Key header charges the provider at --downstream (POST
/charges, with the same Idempotency-Key) and creates a payment (201).
A retry with the same key and body replays the stored answer byte for
byte with "Idempotency-Replayed: true"; another body gets 422; a retry
while the first is still running gets 409 with Retry-After; a request
without a key gets 400. A failed charge answers 502 and is not stored, so
the retry may succeed. GET /health answers 200.

--flaw check-then-act claims keys in two steps (look, then write) with a
round trip in between, as a service that does SELECT then INSERT: two
concurrent duplicates both run and the provider is charged twice.
"""

import argparse
import hashlib
import http.server
import json
import sys
import threading
import time
import urllib.error
import urllib.request

FLAWS = ("check-then-act",)


class Store:
    """Idempotency records by key: in progress, or done with the answer."""

    def __init__(self, flaw):
        self.flaw = flaw
        self.lock = threading.Lock()
        self.records = {}

    def claim(self, key, fp):
        """Return None if the caller now holds key, else the record found."""
        if self.flaw == "check-then-act":
            with self.lock:
                rec = self.records.get(key)
            if rec is not None:
                return rec
            time.sleep(0.005)  # the round trip between the check and the write
            with self.lock:
                self.records[key] = {"state": "in_progress", "fp": fp}
            return None
        with self.lock:
            rec = self.records.get(key)
            if rec is None:
                self.records[key] = {"state": "in_progress", "fp": fp}
            return rec

    def complete(self, key, fp, status, headers, body):
        with self.lock:
            self.records[key] = {"state": "done", "fp": fp, "status": status,
                                 "headers": headers, "body": body}

    def release(self, key):
        with self.lock:
            self.records.pop(key, None)


class Payments:
    def __init__(self):
        self.lock = threading.Lock()
        self.next = 0

    def create(self, amount, currency):
        with self.lock:
            self.next += 1
            return {"id": "pay_%06d" % self.next, "amount": amount,
                    "currency": currency, "status": "succeeded"}


def make_handler(store, payments, downstream):
    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body leave at once

        def log_message(self, fmt, *args):
            pass

        def send(self, status, body, headers=()):
            self.send_response(status)
            for name, value in headers:
                self.send_header(name, value)
            self.send_header("Content-Length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)

        def send_json(self, status, obj, headers=()):
            body = (json.dumps(obj) + "\n").encode()
            self.send(status, body, [("Content-Type", "application/json")] + list(headers))

        def do_GET(self):
            if self.path == "/health":
                self.send_json(200, {"ok": True})
            else:
                self.send_json(404, {"error": "not found"})

        def do_POST(self):
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if self.path != "/payments":
                self.send_json(404, {"error": "not found"})
                return
            key = self.headers.get("Idempotency-Key")
            if not key:
                self.send_json(400, {"error": "Idempotency-Key header required"})
                return
            fp = hashlib.sha256(self.path.encode() + b"\0" + raw).hexdigest()
            rec = store.claim(key, fp)
            if rec is not None:
                self.answer_existing(rec, fp)
                return
            status, headers, body = self.execute(key, raw)
            if status >= 500:
                store.release(key)
            else:
                store.complete(key, fp, status, headers, body)
            self.send(status, body, headers)

        def answer_existing(self, rec, fp):
            if rec["fp"] != fp:
                self.send_json(422, {"error": "key reused with another request"})
            elif rec["state"] == "in_progress":
                self.send_json(409, {"error": "a request with this key is in progress"},
                               [("Retry-After", "1")])
            else:
                self.send(rec["status"], rec["body"],
                          rec["headers"] + [("Idempotency-Replayed", "true")])

        def execute(self, key, raw):
            try:
                req = json.loads(raw)
                amount, currency = int(req["amount"]), str(req["currency"])
            except (ValueError, KeyError, TypeError):
                return 400, [("Content-Type", "application/json")], b'{"error": "bad body"}\n'
            if downstream:
                charge = urllib.request.Request(
                    downstream.rstrip("/") + "/charges",
                    data=json.dumps({"amount": amount, "currency": currency}).encode(),
                    headers={"Content-Type": "application/json", "Idempotency-Key": key},
                    method="POST")
                try:
                    with urllib.request.urlopen(charge, timeout=10) as resp:
                        resp.read()
                except (urllib.error.URLError, OSError) as e:
                    body = (json.dumps({"error": "payment provider: %s" % e}) + "\n").encode()
                    return 502, [("Content-Type", "application/json")], body
            p = payments.create(amount, currency)
            body = (json.dumps(p) + "\n").encode()
            return 201, [("Content-Type", "application/json"),
                         ("Location", "/payments/" + p["id"])], body

    return Handler


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--addr", default="127.0.0.1:8090")
    ap.add_argument("--downstream", default="")
    ap.add_argument("--flaw", default="", choices=("",) + FLAWS)
    args = ap.parse_args()
    host, port = args.addr.rsplit(":", 1)
    handler = make_handler(Store(args.flaw), Payments(), args.downstream)
    http.server.ThreadingHTTPServer.request_queue_size = 128
    srv = http.server.ThreadingHTTPServer((host, int(port)), handler)
    srv.daemon_threads = True
    print("payments API (python) on http://%s" % args.addr, flush=True)
    try:
        srv.serve_forever()
    except KeyboardInterrupt:
        pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
