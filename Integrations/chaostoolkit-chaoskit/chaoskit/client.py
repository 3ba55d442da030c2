"""The control protocol (version 1) over a Unix socket or loopback TCP, with the token.

Mirrors ChaosControl's `ControlClient`: one request per connection, `Connection: close`,
`Authorization: Bearer TOKEN`, `Host` the endpoint's own (`localhost` on a Unix socket), and
a Unix socket whose peer is another user is refused before anything is sent.
"""

import http.client
import json
import os
import socket
import struct
from typing import Any, Dict, Optional
from urllib.parse import quote

from chaoslib.exceptions import ActivityFailed

from .endpoints import Endpoint

__all__ = ["Client"]

USER_AGENT = "chaostoolkit-chaoskit/0.1.0"
PLAN_TYPE = "text/x-chaos-plan; charset=utf-8"


class _UnixConnection(http.client.HTTPConnection):
    def __init__(self, path: str, timeout: Optional[float]):
        super().__init__("localhost", timeout=timeout)
        self._path = path

    def connect(self) -> None:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        sock.settimeout(self.timeout)
        try:
            sock.connect(self._path)
            credentials = sock.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
            _, uid, _ = struct.unpack("3i", credentials)
        except BaseException:
            sock.close()
            raise
        if uid != os.geteuid():
            sock.close()
            raise _PeerRefused(
                f"the process behind {self._path} runs as uid {uid}, not as you (uid "
                f"{os.geteuid()}); it could answer anything and would learn what is sent to it"
            )
        self.sock = sock


class _PeerRefused(Exception):
    pass


class Client:
    """A client of one endpoint."""

    def __init__(self, endpoint: Endpoint, timeout: Optional[float] = 5.0):
        self.endpoint = endpoint
        self.timeout = timeout

    def _connection(self, timeout: Optional[float]) -> http.client.HTTPConnection:
        url = self.endpoint.url
        if url.startswith("unix:"):
            path = url[5:]
            if path.startswith("//"):
                path = path[2:]
            if not path.startswith("/"):
                raise ActivityFailed(f"{self.endpoint.describe()}: the socket path in {self.endpoint.file} is not absolute")
            return _UnixConnection(path, timeout)
        if url.startswith("http://"):
            rest = url[7:].split("/", 1)[0]
            if rest.startswith("["):
                host, _, port = rest[1:].partition("]:")
            else:
                host, _, port = rest.rpartition(":")
            if not host or not port.isdigit():
                raise ActivityFailed(f"{self.endpoint.describe()}: the url in {self.endpoint.file} has no host and port")
            return http.client.HTTPConnection(host, int(port), timeout=timeout)
        raise ActivityFailed(
            f"{self.endpoint.describe()}: the endpoint file {self.endpoint.file} names '{url[:80]}'; "
            "only http://HOST:PORT and unix:/path endpoints exist"
        )

    def request(
        self,
        method: str,
        path: str,
        body: Optional[bytes] = None,
        content_type: str = "application/json",
        wait_forever: bool = False,
    ) -> Any:
        """Sends one request; the decoded JSON answer of a 2xx, else `ActivityFailed` saying why."""
        who = self.endpoint.describe()
        connection = self._connection(None if wait_forever else self.timeout)
        headers = {
            "Authorization": f"Bearer {self.endpoint.token}",
            "Accept": "application/json",
            "Connection": "close",
            "User-Agent": USER_AGENT,
        }
        if body is not None:
            headers["Content-Type"] = content_type
        try:
            connection.request(method, path, body=body, headers=headers)
            response = connection.getresponse()
            status = response.status
            data = response.read()
        except _PeerRefused as refusal:
            raise ActivityFailed(f"{who}: {refusal}")
        except (FileNotFoundError, ConnectionRefusedError) as error:
            raise ActivityFailed(
                f"{who}: nothing listens there ({error.strerror}); the process has ended or its "
                f"endpoint stopped, and its endpoint file {self.endpoint.file} is stale"
            )
        except socket.timeout:
            raise ActivityFailed(
                f"{who}: {method} {path} got no answer within {self.timeout} s; is the process "
                "stopped in a debugger, or busy?"
            )
        except (OSError, http.client.HTTPException) as error:
            raise ActivityFailed(f"{who}: {method} {path} failed: {error}")
        finally:
            connection.close()
        if not 200 <= status <= 299:
            raise ActivityFailed(self._refusal(method, path, status, data))
        if not data:
            return None
        try:
            return json.loads(data.decode("utf-8"))
        except ValueError:
            raise ActivityFailed(
                f"{who}: {method} {path} answered {status} with a body that is not JSON "
                f"('{data[:80]!r}'); is this a ChaosKit endpoint?"
            )

    def _refusal(self, method: str, path: str, status: int, data: bytes) -> str:
        who = self.endpoint.describe()
        try:
            error = json.loads(data.decode("utf-8"))["error"]
            kind, message = error.get("kind", "?"), error.get("message", "")
            location = error.get("location")
        except (ValueError, KeyError, TypeError, AttributeError):
            text = data[:80].decode("utf-8", errors="replace")
            return (
                f"{who}: {method} {path} answered {status} without a control-protocol error "
                f"body ('{text}'); is this a ChaosKit endpoint?"
            )
        text = f"{who}: {method} {path} answered {status} {kind}: {message}"
        if isinstance(location, dict) and "line" in location:
            text += f" (at line {location['line']}, column {location.get('column', '?')}"
            text += f", {location['path']})" if location.get("path") else ")"
        if status == 401:
            text += (
                f" (the token in {self.endpoint.file} is not this session's: the file is stale "
                "or was replaced; the process writes a new one at every start)"
            )
        return text

    # The routes this extension uses.

    def status(self) -> Dict[str, Any]:
        answer = self.request("GET", "/v1/status")
        if not isinstance(answer, dict) or answer.get("pid") != self.endpoint.pid:
            raise ActivityFailed(
                f"{self.endpoint.describe()}: the endpoint at {self.endpoint.url} answers for pid "
                f"{answer.get('pid') if isinstance(answer, dict) else '?'}, not {self.endpoint.pid}: "
                f"the endpoint file {self.endpoint.file} is stale"
            )
        return answer

    def entries(self) -> list:
        return self.request("GET", "/v1/entries")

    def apply_json(self, profile: bytes, source: Optional[str], allow_pending: bool) -> Dict[str, Any]:
        query = []
        if source:
            query.append("source=" + quote(source, safe="-._~/"))
        if allow_pending:
            query.append("allowPending=true")
        path = "/v1/entries" + ("?" + "&".join(query) if query else "")
        return self.request("POST", path, body=profile)

    def apply_plan(self, plan: str, source: Optional[str]) -> Dict[str, Any]:
        path = "/v1/entries" + ("?source=" + quote(source, safe="-._~/") if source else "")
        return self.request("POST", path, body=plan.encode("utf-8"), content_type=PLAN_TYPE)

    def revert(self, entry: int) -> Dict[str, Any]:
        return self.request("DELETE", f"/v1/entries/{entry}")

    def revert_all(self, include_clock: bool) -> Dict[str, Any]:
        return self.request("DELETE", "/v1/entries" + ("?includeClock=true" if include_clock else ""))

    def advance(self, duration: str, max_steps: Optional[int]) -> Dict[str, Any]:
        path = "/v1/time/advance?by=" + quote(duration, safe=".+-")
        if max_steps is not None:
            path += f"&steps={int(max_steps)}"
        return self.request("POST", path, wait_forever=True)

    def select(self, response_set: str, response: str) -> Dict[str, Any]:
        body = json.dumps({"response": response}).encode("utf-8")
        return self.request("PUT", "/v1/response-sets/" + quote(response_set, safe=""), body=body)

    def journal(self, point: Optional[str], limit: Optional[int]) -> Dict[str, Any]:
        query = []
        if point:
            query.append("point=" + quote(point, safe=""))
        if limit is not None:
            query.append(f"limit={int(limit)}")
        return self.request("GET", "/v1/journal" + ("?" + "&".join(query) if query else ""))

    def record(self, every_point: bool, points: list) -> Dict[str, Any]:
        body = json.dumps({"everyPoint": every_point, "points": points}).encode("utf-8")
        return self.request("PUT", "/v1/journal", body=body)
