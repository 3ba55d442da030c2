import json
import os

import pytest
from chaoslib.exceptions import ActivityFailed

from chaoskit.endpoints import resolve
from chaoskit.probes import entries


def test_a_pid_a_digit_string_a_file_and_a_program_name_the_same_process(live):
    file = os.path.join(live.control, f"{live.demo_pid}.json")
    for target in (live.demo_pid, str(live.demo_pid), file, {"program": "ConsoleClockDemo"}, {"pid": live.demo_pid}):
        found = resolve(target)
        assert [e.pid for e in found] == [live.demo_pid], target
    assert {e["pid"] for e in entries({"program": "ConsoleClockDemo"})} == {live.demo_pid}


def test_the_pid_of_chaos_run_finds_its_program(live):
    (endpoint,) = resolve(live.runner_pid)
    assert endpoint.pid == live.front_pid
    assert endpoint.is_chaos_run and endpoint.url.startswith("unix:")


def test_a_program_no_endpoint_has_is_refused_naming_it(live):
    with pytest.raises(ActivityFailed) as failure:
        entries({"program": "no-such-program"})
    assert "no-such-program" in str(failure.value)
    assert live.control in str(failure.value)
    assert "ConsoleClockDemo" in str(failure.value)  # what is there


def test_a_pid_without_a_process_is_refused():
    with pytest.raises(ActivityFailed, match="pid 4194304.*not running"):
        entries(4194304)


def test_a_wrong_token_fails_with_what_to_fix(live, tmp_path):
    with open(os.path.join(live.control, f"{live.demo_pid}.json")) as handle:
        record = json.load(handle)
    record["token"] = "0" * 64
    stale = tmp_path / "stale.json"
    stale.write_text(json.dumps(record))
    os.chmod(stale, 0o600)
    with pytest.raises(ActivityFailed) as failure:
        entries(str(stale))
    assert "401" in str(failure.value) and "token" in str(failure.value)
    assert str(stale) in str(failure.value)


def test_a_file_whose_endpoint_answers_for_another_pid_is_stale(live, tmp_path):
    with open(os.path.join(live.control, f"{live.console_pid}.json")) as handle:
        other = json.load(handle)
    other["pid"] = live.demo_pid  # a live pid, but the endpoint is ConsoleDemo's
    file = tmp_path / "swapped.json"
    file.write_text(json.dumps(other))
    with pytest.raises(ActivityFailed, match=f"answers for pid {live.console_pid}, not {live.demo_pid}.*stale"):
        entries(str(file))


def test_a_symbolic_link_is_not_followed(live, tmp_path):
    link = tmp_path / "link.json"
    link.symlink_to(os.path.join(live.control, f"{live.demo_pid}.json"))
    with pytest.raises(ActivityFailed, match="symbolic link"):
        entries(str(link))


def test_a_missing_file_is_refused(tmp_path):
    with pytest.raises(ActivityFailed, match="does not exist"):
        entries(str(tmp_path / "nothing.json"))
