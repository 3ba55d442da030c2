"""Probes: read what a ChaosKit process has applied and what it did."""

from typing import Any, Dict, List

from chaoslib.exceptions import ActivityFailed

from .common import connect, live_entries, logger, pick, require

__all__ = ["entries", "fired", "counters", "journal"]


def entries(target: Any) -> List[Dict[str, Any]]:
    """The live entries of every process the target names, each with its pid and program.

    Each is the endpoint's ENTRY (id, point, provider, enabled, seen, acted, passed,
    lastAct …; Docs/Console.md).
    """
    found = []
    for client, _ in connect(target):
        for entry in live_entries(client):
            found.append(dict(entry, pid=client.endpoint.pid, program=client.endpoint.program))
    return found


def fired(target: Any, entry: Any) -> bool:
    """True when the entry acted at least once, in every process the target names.

    `entry`: an id (int or digits) or a list of ids; or a point name, the entries this run
    applied on that point (all must have acted). An entry that is not live (reverted, or
    never applied) is an error: whether it fired cannot be told.
    """
    every = True
    for client, _ in connect(target):
        live = live_entries(client)
        by_id = {e.get("id"): e for e in live}
        for entry_id in pick(client, entry, live, "check"):
            found = by_id.get(entry_id)
            if found is None:
                raise ActivityFailed(
                    f"{client.endpoint.describe()}: no live entry #{entry_id} (live: "
                    f"{', '.join(f'#{i}' for i in sorted(by_id)) or 'none'}), so whether it fired "
                    "cannot be told"
                )
            acted = int(found.get("acted", 0))
            logger.info(
                f"chaoskit: {client.endpoint.describe()} #{entry_id} {found.get('point')} "
                f"← {found.get('provider')}: seen {found.get('seen')}, acted {acted}"
            )
            every = every and acted > 0
    return every


def counters(target: Any) -> Dict[str, Any]:
    """Calls seen, acted on and passed: the totals over every process the target names,
    and per entry (`entries`: pid, id, point, provider, enabled, seen, acted, passed)."""
    per_entry = []
    for client, _ in connect(target):
        for entry in live_entries(client):
            per_entry.append(
                {
                    "pid": client.endpoint.pid,
                    "id": entry.get("id"),
                    "point": entry.get("point"),
                    "provider": entry.get("provider"),
                    "enabled": entry.get("enabled"),
                    "seen": int(entry.get("seen", 0)),
                    "acted": int(entry.get("acted", 0)),
                    "passed": int(entry.get("passed", 0)),
                }
            )
    return {
        "seen": sum(e["seen"] for e in per_entry),
        "acted": sum(e["acted"] for e in per_entry),
        "passed": sum(e["passed"] for e in per_entry),
        "entries": per_entry,
    }


def journal(target: Any, point: str = None, limit: int = None) -> List[Dict[str, Any]]:
    """The call journal of every process the target names (only Swift programs keep one;
    a `chaos run` program's endpoint has none, and the probe says so).

    `point`: only that point's calls; `limit`: the newest N. It records only the points
    chosen with the record_calls action (or in the program). Per process: capacity,
    recorded, selection and calls, oldest first, with its pid and program.
    """
    found = []
    for client, status in connect(target):
        require(client, status, "journal", "call journal")
        answer = client.journal(point, limit) or {}
        found.append(dict(answer, pid=client.endpoint.pid, program=client.endpoint.program))
    return found
