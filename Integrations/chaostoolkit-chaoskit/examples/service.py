"""The example's two services, standard library only.

    python3 service.py backend PORT             answers 200 "backend ok" to every GET
    python3 service.py front PORT BACKEND_PORT  for every GET, asks the backend on
                                                127.0.0.1:BACKEND_PORT (a new connection each
                                                time, so a `connect` fault can refuse it), and
                                                answers 200 with its body, or 502 when it
                                                cannot connect

PORT 0 takes a free port. Each prints `ready PORT` on standard output once it listens.
"""

import http.client
import sys
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer


class Backend(BaseHTTPRequestHandler):
    def do_GET(self):
        self._answer(200, b"backend ok\n")

    def _answer(self, status, body):
        self.send_response(status)
        self.send_header("Content-Type", "text/plain")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    def log_message(self, format, *args):
        pass


class Front(Backend):
    backend_port = 0

    def do_GET(self):
        connection = http.client.HTTPConnection("127.0.0.1", self.backend_port, timeout=2)
        try:
            connection.request("GET", "/")
            answer = connection.getresponse()
            body = answer.read()
        except OSError as error:
            self._answer(502, f"cannot reach the backend: {error}\n".encode())
            return
        finally:
            connection.close()
        self._answer(200 if answer.status == 200 else 502, body)


def main(arguments):
    if len(arguments) == 2 and arguments[0] == "backend":
        handler = Backend
    elif len(arguments) == 3 and arguments[0] == "front":
        handler = Front
        Front.backend_port = int(arguments[2])
    else:
        sys.exit(__doc__)
    server = ThreadingHTTPServer(("127.0.0.1", int(arguments[1])), handler)
    print(f"ready {server.server_address[1]}", flush=True)
    server.serve_forever()


if __name__ == "__main__":
    main(sys.argv[1:])
