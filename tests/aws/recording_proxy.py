#!/usr/bin/env python3
"""A recording HTTP proxy for the AWS adapter tests: it forwards every request to a server on
loopback (moto, or the fault proxy in front of it) and keeps a copy of it, in the format of
moto's own request recorder (one JSON object per line: method, url, headers, body in base64),
which is what tests/deploy/iam_check.py reads.

  GET  /__recording   every request so far, one JSON line each
  POST /__reset       forget them
  GET  /__ping        200

It records at the client's side of the fault proxy, so it also sees the requests the fault
proxy answers itself (the Price List API). Only the standard library; loopback only.

Usage: recording_proxy.py UPSTREAM_PORT  (prints the port it listens on, then serves)
"""
import base64
import json
import sys
import threading
import urllib.error
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

UPSTREAM = "http://127.0.0.1:%d" % int(sys.argv[1])
LOCK = threading.Lock()
RECORDED = []  # JSON lines


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def reply(self, status, body, content_type):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def do_GET(self):
        self.handle_any()

    def do_HEAD(self):
        self.handle_any()

    def do_PUT(self):
        self.handle_any()

    def do_POST(self):
        self.handle_any()

    def do_DELETE(self):
        self.handle_any()

    def handle_any(self):
        body = self.rfile.read(int(self.headers.get("Content-Length") or 0))
        if self.path == "/__ping":
            return self.reply(200, b"{}", "application/json")
        if self.path == "/__recording":
            with LOCK:
                text = "".join(line + "\n" for line in RECORDED)
            return self.reply(200, text.encode(), "application/x-ndjson")
        if self.path == "/__reset":
            with LOCK:
                RECORDED.clear()
            return self.reply(200, b"{}", "application/json")
        entry = {"method": self.command, "url": "http://%s%s" % (self.headers.get("Host", ""),
                                                               self.path),
                 "headers": dict(self.headers.items()),
                 "body": base64.b64encode(body).decode("ascii"), "body_encoded": True}
        with LOCK:
            RECORDED.append(json.dumps(entry))
        headers = {k: v for k, v in self.headers.items()
                   if k.lower() not in ("content-length", "expect")}
        request = urllib.request.Request(UPSTREAM + self.path,
                                         data=body if self.command not in ("GET", "HEAD") else None,
                                         headers=headers, method=self.command)
        try:
            with urllib.request.urlopen(request, timeout=60) as answer:
                status, data, kind = answer.status, answer.read(), answer.headers.get(
                    "Content-Type", "text/xml")
        except urllib.error.HTTPError as e:
            status, data, kind = e.code, e.read(), e.headers.get("Content-Type", "text/xml")
        self.reply(status, data, kind)


def main():
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    print(server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main()
