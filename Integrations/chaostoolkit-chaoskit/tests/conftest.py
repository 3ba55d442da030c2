"""Live ChaosKit processes for the tests, in a private endpoint directory.

CHAOSKIT_BUILD names a ChaosKit build folder holding chaos, chaos-tool, libChaosPreload.so,
ConsoleClockDemo and ConsoleDemo (default: .build-console/debug of this checkout). The
processes: ConsoleClockDemo (virtual time, system.clock in-process), ConsoleDemo (response
sets, call journal), and the example's front service under `chaos run` with
CHAOS_CONTROL=unix, with its backend beside it (not under chaos).
"""

import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
import time

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
PACKAGE = os.path.dirname(HERE)
REPO = os.path.dirname(os.path.dirname(PACKAGE))
SERVICE = os.path.join(PACKAGE, "examples", "service.py")


class Process:
    def __init__(self, name, command, env):
        self.name = name
        self.lines = []
        self._ready = queue.Queue()
        self.popen = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.DEVNULL, text=True, errors="replace"
        )
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self):
        for line in self.popen.stdout:
            self.lines.append(line.rstrip("\n"))
            if line.startswith("ready "):
                self._ready.put(line.split())

    def ready(self, seconds=30):
        try:
            return self._ready.get(timeout=seconds)
        except queue.Empty:
            raise RuntimeError(
                f"{self.name} did not print `ready` within {seconds} s (exit status {self.popen.poll()}; "
                f"output: {self.lines[-5:]})"
            )

    def wait_for_line(self, text, seconds=5):
        deadline = time.monotonic() + seconds
        while time.monotonic() < deadline:
            if any(text in line for line in self.lines):
                return True
            time.sleep(0.05)
        return False

    def stop(self):
        if self.popen.poll() is None:
            self.popen.terminate()
            try:
                self.popen.wait(5)
            except subprocess.TimeoutExpired:
                self.popen.kill()
                self.popen.wait()


class Session:
    pass


def _build():
    build = os.environ.get("CHAOSKIT_BUILD") or os.path.join(REPO, ".build-console", "debug")
    missing = [
        name
        for name in ("chaos", "chaos-tool", "libChaosPreload.so", "ConsoleClockDemo", "ConsoleDemo")
        if not os.path.exists(os.path.join(build, name))
    ]
    if missing:
        raise RuntimeError(
            f"the ChaosKit build folder {build} lacks {', '.join(missing)}: build them with "
            "swift build --traits Console (products ConsoleClockDemo, ConsoleDemo, chaos, chaos-tool, "
            "ChaosPreload) and set CHAOSKIT_BUILD"
        )
    return os.path.abspath(build)


def _endpoint_of_runner(folder, runner, seconds=15):
    deadline = time.monotonic() + seconds
    while time.monotonic() < deadline:
        for name in os.listdir(folder):
            if name.endswith(".json"):
                try:
                    with open(os.path.join(folder, name)) as handle:
                        record = json.load(handle)
                except (OSError, ValueError):
                    continue
                if record.get("runner") == runner:
                    return record
        time.sleep(0.05)
    raise RuntimeError(f"the program of chaos run {runner} wrote no endpoint file into {folder}")


@pytest.fixture(scope="session")
def live():
    build = _build()
    # Short: a Unix socket's path must stay under 104 bytes.
    scratch = tempfile.mkdtemp(prefix="ctk-")
    control = os.path.join(scratch, "ctl")
    os.mkdir(control, 0o700)
    saved = os.environ.get("CHAOS_CONTROL_DIR")
    os.environ["CHAOS_CONTROL_DIR"] = control
    env = dict(os.environ)
    env.pop("CHAOS_CONTROL", None)
    # Named, so that the launcher never tries to rebuild them in a checkout's build folder.
    env["CHAOS_TOOL"] = os.path.join(build, "chaos-tool")
    env["CHAOS_PRELOAD_LIBRARY"] = os.path.join(build, "libChaosPreload.so")
    empty = os.path.join(scratch, "empty.json")
    with open(empty, "w") as handle:
        handle.write('{"entries": []}\n')
    started = []
    try:
        s = Session()
        s.build, s.control, s.scratch = build, control, scratch
        demo = Process("ConsoleClockDemo", [os.path.join(build, "ConsoleClockDemo")], env)
        started.append(demo)
        console = Process("ConsoleDemo", [os.path.join(build, "ConsoleDemo")], env)
        started.append(console)
        backend = Process("backend", [sys.executable, SERVICE, "backend", "0"], env)
        started.append(backend)
        s.backend_port = int(backend.ready()[1])
        front = Process(
            "front",
            [os.path.join(build, "chaos"), "run", "--quiet", "--profile", empty, "--",
             sys.executable, SERVICE, "front", "0", str(s.backend_port)],
            dict(env, CHAOS_CONTROL="unix"),
        )
        started.append(front)
        s.front_port = int(front.ready()[1])
        demo.ready()
        console.ready()
        s.demo, s.console, s.front = demo, console, front
        s.demo_pid, s.console_pid = demo.popen.pid, console.popen.pid
        s.runner_pid = front.popen.pid
        record = _endpoint_of_runner(control, s.runner_pid)
        s.front_pid, s.front_program = record["pid"], record["program"]
        yield s
    finally:
        for process in reversed(started):
            process.stop()
        if saved is None:
            os.environ.pop("CHAOS_CONTROL_DIR", None)
        else:
            os.environ["CHAOS_CONTROL_DIR"] = saved
        shutil.rmtree(scratch, ignore_errors=True)


@pytest.fixture(autouse=True)
def reverts_what_each_test_applied(live):
    """Every test starts from the processes' own entries: what one applied is reverted after it."""
    yield
    from chaoskit import actions, common

    for (pid, _), applied in list(common._applied.items()):
        if applied:
            try:
                actions.revert(pid, sorted(applied))
            except Exception:
                pass
            applied.clear()
