"""What the actions and probes share: targets made clients, profiles read, entries picked."""

import json
import logging
import os
from typing import Any, Dict, List, Optional, Tuple

from chaoslib.exceptions import ActivityFailed

from .client import Client
from .endpoints import Endpoint, resolve

logger = logging.getLogger("chaostoolkit")

CLOCK_POINT = "system.clock"

# The entries this extension applied, per process session (pid and token: a process
# started again under the same pid has a new token), id -> point. Chaos Toolkit runs an
# experiment's method and rollbacks in one Python process, so a rollback finds here what
# the method applied.
_applied: Dict[Tuple[int, str], Dict[int, str]] = {}


def connect(target: Any, timeout: Optional[float] = 5.0) -> List[Tuple[Client, Dict[str, Any]]]:
    """A client per endpoint the target names, each checked with `GET /v1/status`."""
    found = []
    for endpoint in resolve(target):
        client = Client(endpoint, timeout=timeout)
        found.append((client, client.status()))
    return found


def require(client: Client, status: Dict[str, Any], feature: str, what: str) -> None:
    """Refuses, naming the target, when its endpoint does not serve `feature`."""
    if feature in (status.get("features") or []):
        return
    endpoint = client.endpoint
    if endpoint.is_chaos_run:
        why = (
            f"its endpoint is served by ChaosKit's preload library (kind {endpoint.kind}), "
            "which serves only status, go, time and the entries: it has no "
            f"{what}. Only a Swift program with ChaosConsole (Chaos.bootstrap(control:)) answers this"
        )
    else:
        why = f"its endpoint does not list the '{feature}' feature in /v1/status (an older ChaosKit?)"
    raise ActivityFailed(f"{endpoint.describe()} cannot answer for the {what}: {why}")


def applied_by_us(endpoint: Endpoint) -> Dict[int, str]:
    return _applied.setdefault((endpoint.pid, endpoint.token), {})


def is_plan_text(text: str) -> bool:
    for line in text.splitlines():
        stripped = line.strip()
        if not stripped or stripped.startswith("#"):
            continue
        return stripped.split()[0] == "chaos-plan"
    return False


def load_profile(profile: Any) -> Tuple[str, bytes, str]:
    """(`json` or `plan`, the body, a source name for located errors)."""
    if isinstance(profile, dict):
        return "json", json.dumps(profile).encode("utf-8"), "profile"
    if not isinstance(profile, str) or not profile.strip():
        raise ActivityFailed(
            "a profile is a JSON object, a path to a JSON profile or fault-plan file, or "
            f"fault-plan text; got {type(profile).__name__} {str(profile)[:40]!r}"
        )
    if is_plan_text(profile):
        return "plan", profile.encode("utf-8"), "plan"
    path = profile
    try:
        with open(path, "rb") as handle:
            data = handle.read((1 << 20) + 1)
    except FileNotFoundError:
        raise ActivityFailed(f"the profile file {path} does not exist (relative to {os.getcwd()})")
    except OSError as error:
        raise ActivityFailed(f"the profile file {path} cannot be read: {error.strerror}")
    if len(data) > 1 << 20:
        raise ActivityFailed(f"the profile file {path} is over 1 MiB, more than an endpoint takes")
    text = data.decode("utf-8", errors="replace")
    if is_plan_text(text):
        return "plan", data, os.path.basename(path)
    try:
        json.loads(text)
    except ValueError as error:
        raise ActivityFailed(
            f"the profile file {path} is neither JSON ({error}) nor a fault plan (its first line "
            "would be `chaos-plan 1`)"
        )
    return "json", data, os.path.basename(path)


def live_entries(client: Client) -> List[Dict[str, Any]]:
    answer = client.entries()
    if not isinstance(answer, list):
        raise ActivityFailed(f"{client.endpoint.describe()}: GET /v1/entries did not answer a list")
    return answer


def pick(client: Client, entry: Any, live: List[Dict[str, Any]], purpose: str) -> List[int]:
    """The ids `entry` names in this process.

    An id (int or digits) or a list of them; a point name: the entries on that point this
    run applied to the process.
    """
    endpoint = client.endpoint
    if isinstance(entry, bool):
        raise ActivityFailed(f"an entry is an id or a point name, not {entry!r}")
    if isinstance(entry, list):
        ids: List[int] = []
        for item in entry:
            ids += pick(client, item, live, purpose)
        return ids
    if isinstance(entry, int) or (isinstance(entry, str) and entry.strip().isdigit()):
        return [int(entry)]
    if isinstance(entry, str) and entry.strip():
        point = entry.strip()
        ours = sorted(i for i, p in applied_by_us(endpoint).items() if p == point)
        if not ours:
            on_point = [f"#{e['id']} {e.get('provider', '')}" for e in live if e.get("point") == point]
            hint = f" (live on it: {', '.join(on_point)}; name one by its id)" if on_point else ""
            raise ActivityFailed(
                f"{endpoint.describe()}: this run applied no entry on {point} here, so there is "
                f"nothing to {purpose}{hint}"
            )
        return ours
    raise ActivityFailed(
        f"an entry is an id (an int or digits), a list of ids, or a point name; got {entry!r}"
    )
