"""An HTTP server on 127.0.0.1 in a thread whose replies a test scripts (http.server)."""

import json
import threading
import time
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Script:
    """Replies in order, one per request: (status, headers, body) or ("hang", seconds) or
    ("apply-then-hang", seconds), a write the server applies before its response is lost."""

    def __init__(self, replies):
        self.replies = list(replies)
        self.requests = []  # (path, headers dict, body)
        self.applied = []  # bodies of the writes the server applied
        self.lock = threading.Lock()

    def take(self, path, headers, body):
        with self.lock:
            self.requests.append((path, headers, body))
            return self.replies.pop(0) if self.replies else (200, {}, {"ok": True})


class Server:
    def __init__(self, replies):
        self.script = Script(replies)
        script = self.script

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args):
                pass

            def do_POST(self):
                length = int(self.headers.get("Content-Length", "0"))
                body = self.rfile.read(length).decode()
                reply = script.take(self.path, dict(self.headers), body)
                if reply[0] in ("hang", "apply-then-hang"):
                    if reply[0] == "apply-then-hang":
                        script.applied.append(body)
                    time.sleep(reply[1])
                    return
                status, headers, payload = reply
                if status == 200:
                    script.applied.append(body)
                data = json.dumps(payload).encode()
                self.send_response(status)
                for name, value in headers.items():
                    self.send_header(name, value)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

            do_GET = do_POST

        self.httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.httpd.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)

    def __enter__(self):
        self.thread.start()
        return self

    def __exit__(self, *exc):
        self.httpd.shutdown()
        self.httpd.server_close()


def post(url, body, key=None, timeout_ms=None):
    """POSTs JSON with urllib: the response, or raises (HTTPError, a timeout, ...)."""
    import urllib.request

    headers = {"Content-Type": "application/json"}
    if key:
        headers["Idempotency-Key"] = key
    request = urllib.request.Request(url, data=json.dumps(body).encode(), headers=headers,
                                     method="POST")
    timeout = (timeout_ms or 2000) / 1000
    with urllib.request.urlopen(request, timeout=timeout) as response:
        return json.loads(response.read())
