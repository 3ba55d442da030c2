"""Actions: change what a ChaosKit process does."""

from typing import Any, Dict, List

from chaoslib.exceptions import ActivityFailed

from .common import (
    CLOCK_POINT,
    applied_by_us,
    connect,
    live_entries,
    load_profile,
    logger,
    pick,
    require,
)

__all__ = ["apply_profile", "revert", "advance_time", "set_response", "record_calls"]


def apply_profile(target: Any, profile: Any, allow_pending: bool = False) -> List[Dict[str, Any]]:
    """Apply a profile in every process the target names, all or nothing in each.

    `target`: a pid (int or digits; the pid of `chaos run` finds its program), a path to
    an endpoint file, or {"program": NAME} (every endpoint whose program is NAME).
    `profile`: a JSON profile as an object or a file, for a Swift program; a fault plan
    (Docs/FaultPlan.md) as a file or text, for a `chaos run` program, whose endpoint takes
    compiled plans only. `allow_pending`: let entries wait for points not made yet.
    Returns, per process, the ids of the entries applied and the seed.
    """
    form, body, source = load_profile(profile)
    results = []
    for client, _ in connect(target):
        endpoint = client.endpoint
        if form == "json" and endpoint.is_chaos_run:
            raise ActivityFailed(
                f"{endpoint.describe()} takes compiled fault plans (text/x-chaos-plan), not JSON "
                "profiles: a chaos run program has no profile compiler, and the compiler is "
                "ChaosKit's Swift tool, which this extension does not run. Give a plan file "
                "instead: compile the profile with `chaoskit validate --for run --print-plan "
                "PROFILE.json > PROFILE.plan` (what Scripts/check-chaostoolkit.sh does), or apply "
                "it with `chaoskit ctl apply PID PROFILE.json`"
            )
        if form == "plan" and not endpoint.is_chaos_run:
            raise ActivityFailed(
                f"{endpoint.describe()} takes JSON profiles, not fault plans: give the profile "
                "the plan was compiled from"
            )
        if form == "plan":
            answer = client.apply_plan(body.decode("utf-8"), source)
        else:
            answer = client.apply_json(body, source, allow_pending)
        ids = [int(i) for i in (answer or {}).get("entries", [])]
        points = {e.get("id"): e.get("point", "?") for e in live_entries(client)}
        mine = applied_by_us(endpoint)
        for entry_id in ids:
            mine[entry_id] = points.get(entry_id, "?")
        logger.info(f"chaoskit: applied {', '.join(f'#{i}' for i in ids)} in {endpoint.describe()}")
        results.append(
            {"pid": endpoint.pid, "program": endpoint.program, "entries": ids, "seed": (answer or {}).get("seed")}
        )
    return results


def revert(target: Any, entry: Any = None, include_clock: bool = False) -> List[Dict[str, Any]]:
    """Revert entries in every process the target names.

    `entry`: None, every entry this run applied there (with apply_profile); an id or a
    list of ids; a point name, the entries this run applied on that point; "all", every
    live entry but those on system.clock (a program on virtual time waits on them), or
    those too with `include_clock`. Returns, per process, the ids reverted (and kept).
    """
    results = []
    for client, _ in connect(target):
        endpoint = client.endpoint
        mine = applied_by_us(endpoint)
        kept: List[int] = []
        if entry == "all":
            if endpoint.is_chaos_run:
                # Its endpoint reverts every entry at once, clock or not: keep the clock's
                # as `chaos ctl revert` does, by reverting the others one by one.
                live = live_entries(client)
                ids = [e["id"] for e in live if include_clock or e.get("point") != CLOCK_POINT]
                kept = [e["id"] for e in live if e["id"] not in ids]
                for entry_id in ids:
                    client.revert(entry_id)
                reverted = ids
            else:
                answer = client.revert_all(include_clock) or {}
                reverted = [int(i) for i in answer.get("entries", [])]
                kept = [int(i) for i in answer.get("kept", [])]
        else:
            if entry is None:
                ids = sorted(mine)
                if not ids:
                    raise ActivityFailed(
                        f"{endpoint.describe()}: this run applied no entry here, so there is nothing "
                        "to revert; name an id, or entry \"all\" for every live entry"
                    )
            else:
                ids = pick(client, entry, live_entries(client), "revert")
            reverted = []
            for entry_id in ids:
                answer = client.revert(entry_id) or {}
                reverted += [int(i) for i in answer.get("entries", [entry_id])]
        for entry_id in reverted:
            mine.pop(entry_id, None)
        logger.info(f"chaoskit: reverted {reverted or 'nothing'} in {endpoint.describe()}")
        result = {"pid": endpoint.pid, "program": endpoint.program, "reverted": reverted}
        if kept:
            result["kept"] = kept
        results.append(result)
    return results


def advance_time(target: Any, duration: str, max_steps: int = None) -> List[Dict[str, Any]]:
    """Move the virtual time of every process the target names forward by `duration`.

    `duration`: ChaosKit's duration text ("1h", "1h30m", "90m", "250ms"). Every sleep and
    timer due on the way runs; this waits until the last has. The process must run on
    virtual time (VirtualTime, or the system.clock item virtual); `max_steps` bounds the
    steps (default: the endpoint's, a million). Returns, per process, its virtual time.
    """
    if not isinstance(duration, str) or not duration.strip():
        raise ActivityFailed(f"a duration is text such as \"1h30m\", not {duration!r}")
    results = []
    for client, _ in connect(target):
        answer = client.advance(duration.strip(), max_steps) or {}
        answer = dict(answer, pid=client.endpoint.pid, program=client.endpoint.program)
        results.append(answer)
    return results


def set_response(target: Any, set: str, response: str) -> List[Dict[str, Any]]:  # noqa: A002
    """Select `response` in the response set `set` of every process the target names.

    Only Swift programs whose ChaosConsole was given response sets have them; a `chaos run`
    program has none, and the action says so. Returns, per process, the set.
    """
    results = []
    for client, status in connect(target):
        require(client, status, "response-sets", "response sets")
        answer = client.select(str(set), str(response)) or {}
        if answer.get("selected") != response:
            raise ActivityFailed(
                f"{client.endpoint.describe()}: the response set {set} answered with "
                f"'{answer.get('selected')}' selected, not '{response}'"
            )
        results.append(dict(answer, pid=client.endpoint.pid, program=client.endpoint.program))
    return results


def record_calls(target: Any, points: List[str] = None, every_point: bool = False) -> List[Dict[str, Any]]:
    """Choose what the call journal of every process the target names records.

    `points`: point names to record; `every_point`: every point whose arguments hold no
    secrets. Neither: recording stops. A `chaos run` program has no call journal.
    """
    names = [str(p) for p in (points or [])]
    results = []
    for client, status in connect(target):
        require(client, status, "journal", "call journal")
        answer = client.record(bool(every_point), names) or {}
        results.append(
            {"pid": client.endpoint.pid, "program": client.endpoint.program, "selection": answer.get("selection")}
        )
    return results
