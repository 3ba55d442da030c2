#!/usr/bin/env python3
"""Re-records the real HAR fixtures of Tests/ChaosNetworkTests/Resources/recorded/.

Not run in CI: it needs a browser and a proxy. On a Debian machine:

    apt-get install -y chromium
    pip install playwright mitmproxy
    python3 Scripts/record-har-fixtures.py

It starts a small HTTP server on 127.0.0.1 (no other network is used) whose page makes the
requests HAR readers must cope with: a query string, a JSON POST, cookies, a redirect, an
iso-8859-1 text body, binary content, a 404, and a request to a port nobody listens on
(a failed entry). Then:

- Playwright drives Debian's Chromium (/usr/bin/chromium; no browser download) through
  the page and writes chromium-playwright.har (record_har_path);
- mitmdump runs as a proxy with `--set hardump=...` while the same requests go through
  it, and writes mitmproxy.har.

Cookie values and tokens in the traffic are made up for the fixture; nothing secret is
recorded. Timestamps, ports and user agents differ on every run: tests must not depend
on them (they replay against whatever port the archive names).
"""
import http.server
import json
import os
import shutil
import socket
import subprocess
import sys
import tempfile
import threading
import time
import urllib.error
import urllib.request

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.join(HERE, "..", "Tests", "ChaosNetworkTests", "Resources", "recorded")
PNG = bytes.fromhex(
    "89504e470d0a1a0a0000000d4948445200000001000000010806000000"
    "1f15c4890000000d49444154789c6360000002000001e221bc330000000049454e44ae426082"
)
LATIN1 = "Crème brûlée à la café, 10 €uro? No: 10 euro. Ça va.".replace("€", "E").encode("iso-8859-1")


def closed_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


REFUSED_PORT = closed_port()


class Handler(http.server.BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):
        pass

    def send(self, status, body, content_type, extra=()):
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        self.send_header("Content-Length", str(len(body)))
        for name, value in extra:
            self.send_header(name, value)
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def do_GET(self):
        path = self.path
        if path == "/":
            page = f"""<!doctype html><meta charset="utf-8"><title>fixture</title>
<script>
async function run() {{
  const log = [];
  const step = async (name, f) => {{ try {{ const r = await f(); log.push(name + ' ' + r.status); await r.arrayBuffer(); }} catch (e) {{ log.push(name + ' failed'); }} }};
  await step('items', () => fetch('/api/items?page=2&sort=name&api_key=fixture-key-123'));
  await step('login', () => fetch('/api/login', {{ method: 'POST', headers: {{ 'Content-Type': 'application/json', 'Authorization': 'Bearer fixture-token-456' }},
      body: JSON.stringify({{ user: 'ada', password: 'fixture-password', remember: true }}) }}));
  await step('latin1', () => fetch('/latin1.txt'));
  await step('image', () => fetch('/pixel.png'));
  await step('redirect', () => fetch('/old-place'));
  await step('missing', () => fetch('/missing'));
  await step('refused', () => fetch('http://127.0.0.1:{REFUSED_PORT}/refused', {{ mode: 'no-cors' }}));
  document.title = 'done ' + log.join(', ');
}}
run();
</script>"""
            self.send(200, page.encode(), "text/html; charset=utf-8", [("Set-Cookie", "session=fixture-session-789; Path=/; HttpOnly")])
        elif path.startswith("/api/items"):
            body = json.dumps({"page": 2, "items": [{"id": 3, "name": "Ada"}, {"id": 4, "name": "Bo"}]}).encode()
            self.send(200, body, "application/json")
        elif path == "/latin1.txt":
            self.send(200, LATIN1, "text/plain; charset=iso-8859-1")
        elif path == "/pixel.png":
            self.send(200, PNG, "image/png", [("Cache-Control", "max-age=60")])
        elif path == "/old-place":
            self.send(302, b"", "text/plain", [("Location", "/new-place")])
        elif path == "/new-place":
            self.send(200, b"moved here", "text/plain; charset=utf-8")
        else:
            self.send(404, b'{"error":"not found"}', "application/json")

    def do_POST(self):
        length = int(self.headers.get("Content-Length", "0"))
        body = self.rfile.read(length)
        reply = json.dumps({"ok": True, "received": len(body)}).encode()
        self.send(200, reply, "application/json", [("Set-Cookie", "token=fixture-cookie-000; Path=/; Secure")])


def serve():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    return server


def record_playwright(base, out):
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        browser = p.chromium.launch(executable_path="/usr/bin/chromium", args=["--no-sandbox"])
        context = browser.new_context(record_har_path=out)
        page = context.new_page()
        page.goto(base + "/")
        page.wait_for_function("document.title.startsWith('done')", timeout=20000)
        print("playwright:", page.title())
        context.close()
        browser.close()


def record_mitmproxy(base, out):
    port = closed_port()
    proxy = subprocess.Popen(
        ["mitmdump", "--listen-host", "127.0.0.1", "--listen-port", str(port), "--set", f"hardump={out}", "-q"],
        stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL,
    )
    try:
        for _ in range(100):
            try:
                socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
                break
            except OSError:
                time.sleep(0.1)
        opener = urllib.request.build_opener(
            urllib.request.ProxyHandler({"http": f"http://127.0.0.1:{port}"}),
            NoRedirect(),
        )

        def fetch(path, data=None, headers=None, url=None):
            request = urllib.request.Request(url or base + path, data=data, headers=headers or {})
            try:
                with opener.open(request, timeout=10) as response:
                    response.read()
                    return response.status
            except urllib.error.HTTPError as error:
                return error.code

        fetch("/api/items?page=2&sort=name&api_key=fixture-key-123", headers={"Cookie": "session=fixture-session-789"})
        fetch("/api/login", data=json.dumps({"user": "ada", "password": "fixture-password", "remember": True}).encode(),
              headers={"Content-Type": "application/json", "Authorization": "Bearer fixture-token-456"})
        fetch("/latin1.txt")
        fetch("/pixel.png")
        fetch("/old-place")
        fetch("/missing")
        fetch(None, url=f"http://127.0.0.1:{REFUSED_PORT}/refused")
    finally:
        proxy.terminate()
        proxy.wait(timeout=20)
    print("mitmproxy:", os.path.getsize(out), "bytes")


class NoRedirect(urllib.request.HTTPRedirectHandler):
    def redirect_request(self, *args, **kwargs):
        return None


def main():
    os.makedirs(OUT, exist_ok=True)
    server = serve()
    base = f"http://127.0.0.1:{server.server_address[1]}"
    with tempfile.TemporaryDirectory() as scratch:
        chromium = os.path.join(scratch, "chromium-playwright.har")
        mitm = os.path.join(scratch, "mitmproxy.har")
        record_playwright(base, chromium)
        record_mitmproxy(base, mitm)
        for path in (chromium, mitm):
            shutil.copy(path, os.path.join(OUT, os.path.basename(path)))
    server.shutdown()
    print("written to", os.path.normpath(OUT))


if __name__ == "__main__":
    sys.exit(main())
