"""Against Swift programs with ChaosConsole: ConsoleClockDemo and ConsoleDemo."""

import json
import time
from datetime import datetime

import pytest
from chaoslib.exceptions import ActivityFailed

from chaoskit.actions import advance_time, apply_profile, record_calls, revert, set_response
from chaoskit.probes import counters, entries, fired, journal
from helpers import CLOCK_PLAN, OFFSET_PROFILE


def _ids(target):
    return {e["id"] for e in entries(target)}


def test_a_clock_offset_applies_fires_and_reverts(live):
    before = _ids(live.demo_pid)
    (applied,) = apply_profile(live.demo_pid, OFFSET_PROFILE)
    (entry,) = applied["entries"]
    assert entry not in before and _ids(live.demo_pid) == before | {entry}
    advance_time(live.demo_pid, "1m")  # the program reads its clock on the way
    assert fired(live.demo_pid, entry) is True
    assert fired(live.demo_pid, "system.clock") is True
    mine = [e for e in counters(live.demo_pid)["entries"] if e["id"] == entry]
    assert mine and mine[0]["acted"] > 0 and mine[0]["point"] == "system.clock"

    (reverted,) = revert(live.demo_pid)
    assert reverted["reverted"] == [entry]
    assert _ids(live.demo_pid) == before  # the program's own virtual-time entry stays
    with pytest.raises(ActivityFailed, match=f"no live entry #{entry}"):
        fired(live.demo_pid, entry)
    with pytest.raises(ActivityFailed, match="applied no entry"):
        revert(live.demo_pid)


def test_a_profile_file_applies_and_an_entry_that_never_acts_has_not_fired(live, tmp_path):
    # A point the program never makes: the entry waits for it, and never acts.
    profile = tmp_path / "pending.json"
    profile.write_text(json.dumps({"entries": [{"point": "demo.never", "provider": "original"}]}))
    (applied,) = apply_profile(live.demo_pid, str(profile), allow_pending=True)
    (entry,) = applied["entries"]
    time.sleep(0.3)
    assert fired(live.demo_pid, entry) is False
    assert fired(live.demo_pid, [entry]) is False


def test_advance_moves_virtual_time_by_the_duration(live):
    (first,) = advance_time(live.demo_pid, "1s")
    (second,) = advance_time({"program": "ConsoleClockDemo"}, "1h30m")
    elapsed = (second["nanosecondsSince1970"] - first["nanosecondsSince1970"]) / 1e9
    assert elapsed == pytest.approx(5400, abs=1)
    assert second["pid"] == live.demo_pid
    assert live.demo.wait_for_line("woke")


def test_a_duration_the_endpoint_cannot_read_fails(live):
    with pytest.raises(ActivityFailed, match="answered 400"):
        advance_time(live.demo_pid, "soon")


def test_a_bad_profile_fails_located_and_applies_nothing(live):
    before = _ids(live.demo_pid)
    bad = {"entries": [{"point": "system.clock", "provider": {"item": "offset", "parameters": {"by": "sideways"}}}]}
    with pytest.raises(ActivityFailed) as failure:
        apply_profile(live.demo_pid, bad)
    assert "422" in str(failure.value) and "$.entries[0]" in str(failure.value)
    assert _ids(live.demo_pid) == before


def test_a_plan_is_refused_by_a_swift_program(live):
    with pytest.raises(ActivityFailed, match="takes JSON profiles, not fault plans"):
        apply_profile(live.demo_pid, CLOCK_PLAN)


def test_a_response_is_selected_and_the_program_answers_with_it(live):
    (selected,) = set_response(live.console_pid, "weather", "storm")
    assert selected["selected"] == "storm"
    assert live.console.wait_for_line("weather: storm warning")
    set_response(live.console_pid, "weather", "sunny")
    with pytest.raises(ActivityFailed, match="404|422"):
        set_response(live.console_pid, "weather", "hail")
    with pytest.raises(ActivityFailed):
        set_response(live.console_pid, "no-such-set", "storm")


def test_the_call_journal_records_the_points_asked_for(live):
    record_calls(live.console_pid, ["demo.greeting"])
    try:
        time.sleep(0.5)
        (answer,) = journal(live.console_pid, point="demo.greeting", limit=5)
        assert 0 < len(answer["calls"]) <= 5
        assert {c["point"] for c in answer["calls"]} == {"demo.greeting"}
        assert answer["selection"]["points"] == ["demo.greeting"]
    finally:
        record_calls(live.console_pid, [])
    (answer,) = journal(live.console_pid)
    assert answer["selection"] == {"everyPoint": False, "points": []}
