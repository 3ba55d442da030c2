"""Against a program under `chaos run` with CHAOS_CONTROL=unix: the C endpoint of the
preload library, which serves status, go, time and the entries only."""

import pytest
from chaoslib.exceptions import ActivityFailed

from chaoskit.actions import advance_time, apply_profile, record_calls, revert, set_response
from chaoskit.probes import counters, entries, fired, journal
from helpers import CLOCK_PLAN, OFFSET_PROFILE, get, refuse_plan


def test_a_refusal_plan_makes_the_service_fail_until_reverted(live, tmp_path):
    assert get(live.front_port) == 200
    plan = tmp_path / "refuse.plan"
    plan.write_text(refuse_plan(live.backend_port))
    (applied,) = apply_profile(live.runner_pid, str(plan))
    assert applied["pid"] == live.front_pid and len(applied["entries"]) == 1
    (entry,) = applied["entries"]
    assert fired(live.front_pid, "system.connect") is False  # no request yet
    assert get(live.front_port) == 502
    assert get(live.front_port) == 502
    assert fired(live.front_pid, "system.connect") is True
    assert fired(live.front_pid, entry) is True
    totals = counters(live.front_pid)
    assert totals["acted"] >= 2 and totals["entries"][0]["point"] == "system.connect"
    (reverted,) = revert({"program": live.front_program})
    assert reverted["reverted"] == [entry]
    assert entries(live.front_pid) == []
    assert get(live.front_port) == 200


def test_a_refusal_of_another_port_never_fires(live):
    apply_profile(live.front_pid, refuse_plan(1))
    assert get(live.front_port) == 200
    assert fired(live.front_pid, "system.connect") is False


def test_a_json_profile_is_refused_with_how_to_compile_it(live):
    with pytest.raises(ActivityFailed) as failure:
        apply_profile(live.front_pid, OFFSET_PROFILE)
    text = str(failure.value)
    assert f"pid {live.front_pid}" in text and "fault plans" in text and "chaos run" in text
    assert entries(live.front_pid) == []


def test_what_the_c_endpoint_cannot_answer_is_said_naming_the_target(live):
    for call, what in (
        (lambda: journal(live.front_pid), "call journal"),
        (lambda: record_calls(live.front_pid, ["system.connect"]), "call journal"),
        (lambda: set_response(live.front_pid, "weather", "storm"), "response sets"),
    ):
        with pytest.raises(ActivityFailed) as failure:
            call()
        text = str(failure.value)
        assert f"pid {live.front_pid} (python3, a chaos run program" in text
        assert f"cannot answer for the {what}" in text and "preload library" in text


def test_advance_off_virtual_time_fails_with_the_endpoints_reason(live):
    with pytest.raises(ActivityFailed, match="409 notRunning: this process does not run on virtual time"):
        advance_time(live.front_pid, "1h")


def test_revert_all_keeps_clock_entries_unless_asked(live):
    (connect,) = apply_profile(live.front_pid, refuse_plan(1))
    (clock,) = apply_profile(live.front_pid, CLOCK_PLAN)
    (first,) = revert(live.front_pid, "all")
    assert first["reverted"] == connect["entries"] and first["kept"] == clock["entries"]
    (second,) = revert(live.front_pid, "all", include_clock=True)
    assert second["reverted"] == clock["entries"]
    assert entries(live.front_pid) == []
