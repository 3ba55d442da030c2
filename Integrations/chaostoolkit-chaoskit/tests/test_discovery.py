import chaoskit

EXPECTED = {
    ("action", "apply_profile"): ["target", "profile", "allow_pending"],
    ("action", "revert"): ["target", "entry", "include_clock"],
    ("action", "advance_time"): ["target", "duration", "max_steps"],
    ("action", "set_response"): ["target", "set", "response"],
    ("action", "record_calls"): ["target", "points", "every_point"],
    ("probe", "entries"): ["target"],
    ("probe", "fired"): ["target", "entry"],
    ("probe", "counters"): ["target"],
    ("probe", "journal"): ["target", "point", "limit"],
}


def test_discovery_lists_every_action_and_probe_with_its_arguments():
    discovery = chaoskit.discover(discover_system=False)
    assert discovery["extension"]["name"] == "chaostoolkit-chaoskit"
    found = {(a["type"], a["name"]): [x["name"] for x in a["arguments"]] for a in discovery["activities"]}
    assert found == EXPECTED
    for activity in discovery["activities"]:
        assert activity["mod"] in ("chaoskit.actions", "chaoskit.probes")
        assert activity["doc"], activity["name"]
    revert = next(a for a in discovery["activities"] if a["name"] == "revert")
    assert revert["arguments"][1] == {"name": "entry", "default": None, "type": "object"}


def test_discovery_of_the_system_lists_the_live_processes(live):
    system = chaoskit.discover(discover_system=True)["system"]
    assert system["directory"] == live.control
    pids = {p["pid"]: p for p in system["processes"]}
    assert pids[live.demo_pid]["program"] == "ConsoleClockDemo"
    assert pids[live.front_pid]["kind"] == "preload"
    assert pids[live.front_pid]["runner"] == live.runner_pid
