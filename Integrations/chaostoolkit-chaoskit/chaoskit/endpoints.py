"""Finding ChaosKit control endpoints: the endpoint files and the targets that name them.

Mirrors ChaosControl's `ControlEndpoint` (Sources/3-SwiftAPI/ChaosControl/ControlEndpoint.swift):
the same directory rules, the same checks on a file (no symbolic link, a regular file of the
user's own, at most 64 KiB), and a `chaos run` pid finds the program it started.
"""

import json
import os
import stat
from dataclasses import dataclass
from typing import Any, Dict, List, Optional

from chaoslib.exceptions import ActivityFailed

__all__ = ["Endpoint", "directory", "resolve"]

MAX_FILE_BYTES = 1 << 16


@dataclass(frozen=True)
class Endpoint:
    """One process's endpoint, as its `PID.json` says."""

    pid: int
    program: str
    url: str
    token: str
    kind: str
    started: str
    runner: Optional[int]
    file: str

    @property
    def is_chaos_run(self) -> bool:
        """A `chaos run` program (preload or seccomp delivery): plans, no journal, no response sets."""
        return self.kind in ("preload", "seccomp")

    def describe(self) -> str:
        what = "a chaos run program" if self.is_chaos_run else "a Swift program"
        return f"pid {self.pid} ({self.program}, {what}, {self.url})"


def directory(environment: Optional[Dict[str, str]] = None) -> str:
    """The directory of endpoint files, chosen as ChaosKit chooses it.

    `CHAOS_CONTROL_DIR` when set, else `$XDG_RUNTIME_DIR/chaoskit`, else
    `~/.chaoskit/control`; inside a shared sticky directory (such as /tmp), its
    private subdirectory `chaoskit-UID`.
    """
    env = os.environ if environment is None else environment
    explicit = env.get("CHAOS_CONTROL_DIR", "")
    if explicit:
        base = explicit
    elif env.get("XDG_RUNTIME_DIR", ""):
        base = os.path.join(env["XDG_RUNTIME_DIR"], "chaoskit")
    else:
        home = env.get("HOME", "") or os.path.expanduser("~")
        base = os.path.join(home, ".chaoskit", "control")
    return files_directory(base)


def files_directory(base: str) -> str:
    try:
        info = os.lstat(base)
    except OSError:
        return base
    shared_sticky = info.st_mode & stat.S_ISVTX and info.st_mode & 0o022
    if stat.S_ISDIR(info.st_mode) and shared_sticky:
        return os.path.join(base, f"chaoskit-{os.geteuid()}")
    return base


def _alive(pid: int) -> bool:
    if pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


class _Untrusted(Exception):
    pass


def _read(path: str) -> Optional[Endpoint]:
    """The record in an endpoint file; None when there is none or it is not one.

    Raises `_Untrusted` for a file another user owns: its process could answer anything
    and would learn every profile sent to it.
    """
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC | os.O_NONBLOCK)
    except OSError:
        return None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > MAX_FILE_BYTES:
            return None
        if info.st_uid != os.geteuid():
            raise _Untrusted(
                f"the endpoint file {path} belongs to uid {info.st_uid}, not to you "
                f"(uid {os.geteuid()}); its process could answer anything and would learn "
                "what is sent to it: steer it as that user"
            )
        data = b""
        while len(data) <= MAX_FILE_BYTES:
            chunk = os.read(fd, 4096)
            if not chunk:
                break
            data += chunk
    finally:
        os.close(fd)
    try:
        record = json.loads(data.decode("utf-8", errors="replace"))
        runner = record.get("runner")
        return Endpoint(
            pid=int(record["pid"]),
            program=str(record["program"]),
            url=str(record["url"]),
            token=str(record["token"]),
            kind=str(record.get("kind", "swift")),
            started=str(record.get("started", "")),
            runner=int(runner) if runner is not None else None,
            file=path,
        )
    except (ValueError, KeyError, TypeError, AttributeError):
        return None


def all_endpoints(folder: str, skipped: Optional[List[str]] = None) -> List[Endpoint]:
    """The endpoints of live processes in `folder`, by pid (files of dead processes are left alone)."""
    try:
        names = os.listdir(folder)
    except OSError:
        return []
    found = []
    for name in names:
        if not name.endswith(".json") or name.startswith("."):
            continue
        try:
            record = _read(os.path.join(folder, name))
        except _Untrusted as refusal:
            if skipped is not None:
                skipped.append(str(refusal))
            continue
        if record is not None and _alive(record.pid):
            found.append(record)
    return sorted(found, key=lambda e: e.pid)


def _hint(folder: str) -> str:
    return (
        f"the endpoint directory is {folder} (CHAOS_CONTROL_DIR, else "
        "$XDG_RUNTIME_DIR/chaoskit, else ~/.chaoskit/control: the process and Chaos "
        "Toolkit must see the same one); a Swift program gets an endpoint with "
        "Chaos.bootstrap(control:) or CHAOS_CONTROL=127.0.0.1:0, a chaos run program "
        "with CHAOS_CONTROL=unix"
    )


def _by_pid(pid: int, folder: str) -> Endpoint:
    try:
        record = _read(os.path.join(folder, f"{pid}.json"))
    except _Untrusted as refusal:
        raise ActivityFailed(str(refusal))
    if record is not None and record.pid == pid and _alive(pid):
        return record
    # The pid of `chaos run` finds the program it started: the first of its tree.
    tree = [e for e in all_endpoints(folder) if e.runner == pid]
    if tree:
        return sorted(tree, key=lambda e: (e.started, e.pid))[0]
    why = "is not running" if not _alive(pid) else "has no endpoint file there"
    raise ActivityFailed(f"no ChaosKit endpoint for pid {pid}: the process {why}; {_hint(folder)}")


def _by_file(path: str) -> Endpoint:
    if not os.path.lexists(path):
        raise ActivityFailed(f"the endpoint file {path} does not exist; {_hint(directory())}")
    if os.path.islink(path):
        raise ActivityFailed(
            f"the endpoint file {path} is a symbolic link; ChaosKit endpoint files are "
            "read without following links: name the file itself"
        )
    try:
        record = _read(path)
    except _Untrusted as refusal:
        raise ActivityFailed(str(refusal))
    if record is None:
        raise ActivityFailed(
            f"{path} is not a ChaosKit endpoint file (a JSON object with pid, program, "
            "url and token, at most 64 KiB)"
        )
    if not _alive(record.pid):
        raise ActivityFailed(
            f"the endpoint file {path} names pid {record.pid} ({record.program}), which "
            "is not running: the file is stale"
        )
    return record


def resolve(target: Any) -> List[Endpoint]:
    """The endpoints a target names.

    A target is a pid (an int or a string of digits), a path to an endpoint file, or
    `{"program": NAME}`: every endpoint whose program is NAME (at least one).
    """
    folder = directory()
    if isinstance(target, bool):
        raise ActivityFailed(f"a target cannot be {target!r}; give a pid, an endpoint file or {{\"program\": NAME}}")
    if isinstance(target, int):
        return [_by_pid(target, folder)]
    if isinstance(target, str):
        text = target.strip()
        if text.isdigit():
            return [_by_pid(int(text), folder)]
        if not text:
            raise ActivityFailed("the target is empty; give a pid, an endpoint file or {\"program\": NAME}")
        return [_by_file(text)]
    if isinstance(target, dict):
        unknown = set(target) - {"program", "pid", "file"}
        if unknown or len(target) != 1:
            raise ActivityFailed(
                f"a target object takes exactly one of program, pid or file; got {sorted(target)}"
            )
        if "pid" in target:
            return resolve(target["pid"] if isinstance(target["pid"], int) else str(target["pid"]))
        if "file" in target:
            return [_by_file(str(target["file"]))]
        program = str(target["program"])
        skipped: List[str] = []
        every = all_endpoints(folder, skipped)
        matched = [e for e in every if e.program == program]
        if not matched:
            there = ", ".join(f"{e.pid} {e.program}" for e in every) or "none"
            extra = f"; skipped: {'; '.join(skipped)}" if skipped else ""
            raise ActivityFailed(
                f"no running ChaosKit endpoint has the program '{program}' (live endpoints: "
                f"{there}){extra}; {_hint(folder)}"
            )
        return matched
    raise ActivityFailed(
        f"a target is a pid, an endpoint file or {{\"program\": NAME}}, not {type(target).__name__}"
    )
