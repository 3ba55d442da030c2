#!/usr/bin/env python3
"""The web console in a real browser: Debian's chromium driven by Playwright (PyPI).

Starts the ConsoleDemo example with a control endpoint, opens its console page with the
token URL, and with the keyboard alone: applies the `stutter` catalogue item (times = 2)
to the point demo.greeting, sees the program's output change and the act appear in the
event log, selects another answer of the `weather` response set, saves a screenshot, and
reverts. It also checks that a page of another origin cannot change chaos, even knowing
the token, and then:
- a bad lease is reported at its field, not at a place in the JSON the page sent;
- lease times are 24-hour (in an en-US page, whose default is 12-hour);
- Revert all asks first (Cancel keeps every entry), then clears the form's "Applied #N";
- the profile editor locates a typed error under the text; fixed, a profile with `sequential`
  and `match` applies; its export, after Revert all, applies again;
- no request of the page (the favicon included) was refused;
- the call journal shows the example's calls once recording is on, the point filter narrows
  it to one point, search finds a row by its text, and pause stops new rows until resumed;
- a misspelt point (demo.greting) is refused with "did you mean" until the box that lets
  entries wait is ticked; then the banner counts it as waiting, not active;
- the event log has audit lines for applies, reverts and a lease that ended, and keeps the
  one for an apply after hundreds of acts; its filter shows acts or audit lines alone.
Then, with the ConsoleClockDemo example on virtual time beside it:
- a program on real time shows no virtual time (nor explorations: it ran none); one on virtual time shows it, Revert all
  keeps its system.clock entry and says why, and the +1 h button and a typed duration move
  it by that much (and end the program's sleep);
- the page of every process lists both, and its link opens the other's console.
Exit status 0 when every check passed.

    python3 Scripts/console-browser-test.py [--build-dir .build/debug] [--screenshot PATH]

Needs: chromium at /usr/bin/chromium (apt), playwright (pip); no browser download.
"""
import argparse
import http.server
import json
import os
import queue
import re
import subprocess
import sys
import tempfile
import threading
import time
import urllib.request

from playwright.sync_api import sync_playwright

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
checks = {"passed": 0, "failed": 0}


def check(condition, label):
    checks["passed" if condition else "failed"] += 1
    print(("ok   " if condition else "FAIL ") + label, flush=True)
    return condition


class Demo:
    """ConsoleDemo as a child process, its standard output read line by line."""

    def __init__(self, build_dir, directory, executable="ConsoleDemo"):
        environment = dict(os.environ, CHAOS_CONTROL="127.0.0.1:0", CHAOS_CONTROL_DIR=directory, CHAOS_DEMO_QUIET="1")
        self.process = subprocess.Popen(
            [os.path.join(build_dir, executable)], stdout=subprocess.PIPE, stderr=subprocess.DEVNULL,
            env=environment, text=True, bufsize=1,
        )
        self.lines = queue.Queue()
        self.seen = []
        threading.Thread(target=self._read, daemon=True).start()
        ready = self.wait_for("ready ", timeout=30)
        if ready is None:
            raise SystemExit(executable + " did not start")
        _, self.url, self.console_url = ready.split(" ")[:3]

    def _read(self):
        for line in self.process.stdout:
            self.lines.put(line.rstrip("\n"))

    def wait_for(self, text, timeout=30.0):
        deadline = time.monotonic() + timeout
        while time.monotonic() < deadline:
            try:
                line = self.lines.get(timeout=max(0.01, deadline - time.monotonic()))
            except queue.Empty:
                break
            self.seen.append(line)
            if text in line:
                return line
        return None

    def api(self, path):
        token = self.console_url.split("token=")[1]
        request = urllib.request.Request(self.url + path, headers={"Authorization": "Bearer " + token})
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.load(response)

    def send(self, method, path, body):
        token = self.console_url.split("token=")[1]
        request = urllib.request.Request(
            self.url + path, data=json.dumps(body).encode(), method=method,
            headers={"Authorization": "Bearer " + token, "Content-Type": "application/json"})
        with urllib.request.urlopen(request, timeout=5) as response:
            return json.load(response)

    def stop(self):
        self.process.terminate()
        try:
            self.process.wait(timeout=5)
        except subprocess.TimeoutExpired:
            self.process.kill()


def revert_all(page):
    """Revert all, confirmed in the page's own question (the endpoint keeps clock entries)."""
    page.locator("#revert-all").click()
    page.locator("#revert-all-confirm").click()


def tab_to(page, predicate, label, limit=80):
    """Presses Tab until the focused element satisfies the JS `predicate` (given `e`)."""
    for _ in range(limit):
        if page.evaluate("() => { const e = document.activeElement; return !!e && (" + predicate + "); }"):
            return True
        page.keyboard.press("Tab")
    return check(False, "Tab reaches " + label)


def foreign_origin_is_refused(browser, demo):
    """A page served from another origin (another port) tries to apply chaos with the token."""
    empty = tempfile.mkdtemp()
    handler = lambda *a, **k: http.server.SimpleHTTPRequestHandler(*a, directory=empty, **k)
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    page = browser.new_page()
    try:
        page.goto("http://127.0.0.1:%d/" % server.server_address[1])
        token = demo.console_url.split("token=")[1]
        body = json.dumps({"entries": [{"point": "demo.greeting", "provider": {"item": "shout"}}]})
        outcome = page.evaluate(
            """async ([url, token, body]) => {
                 const results = [];
                 try { // a simple request: no preflight, the browser sends it with Origin
                   await fetch(url + "/v1/entries?token=" + token, {method: "POST", mode: "no-cors", body});
                   results.push("sent");
                 } catch (e) { results.push("blocked"); }
                 try { // with the token header: a CORS preflight, refused
                   const r = await fetch(url + "/v1/entries", {method: "POST", headers: {Authorization: "Bearer " + token, "Content-Type": "application/json"}, body});
                   results.push("status " + r.status);
                 } catch (e) { results.push("blocked"); }
                 return results;
               }""",
            [demo.url, token, body],
        )
        time.sleep(0.2)
        entries = demo.api("/v1/entries")
        check(not entries, "a page of another origin cannot apply chaos, even with the token (%s)" % ", ".join(outcome))
    finally:
        page.close()
        server.shutdown()


EDITOR_PROFILE = """{"entries": [
  {"point": "demo.greeting",
   "provider": {"sequential": [{"item": "stutter", "parameters": {"times": 50}, "times": 1}, "shout"]}},
  {"point": "network.send", "match": {"path": "/today"},
   "provider": {"item": "status", "parameters": {"code": 503}}}
]}"""


def profile_editor(page, demo):
    """The profile editor: a located error under the text, fixed; a profile with `sequential`
    and `match` validates and applies; the export, after Revert all, brings it back."""
    editor = page.locator("#profile-text")
    problem = page.locator("#profile-problem")
    editor.click()
    page.keyboard.type("demo.greeting=2*stuter->original")
    problem.filter(has_text="column").wait_for(timeout=30_000)
    text = problem.text_content()
    check(text.startswith("line 1, column 17: ") and "editor" not in text and "<control" not in text,
          "a CHAOS line's error is located in the typed text: " + text)

    editor.fill(EDITOR_PROFILE)
    problem.filter(has_text="line 3").wait_for(timeout=30_000)
    text = problem.text_content()
    line = EDITOR_PROFILE.split("\n")[2]
    column = line.index("50") + 1
    check(text.startswith("line 3, column %d: " % column) and "outside 1…20" in text and "$.entries[0]" in text
          and "editor:" not in text and "console:" not in text,
          "a JSON profile's error is located under the text, at line and column: " + text)
    check(editor.get_attribute("aria-invalid") == "true", "the editor is marked invalid")
    problem.locator("button.place").click()
    selected = page.evaluate("() => { const e = document.querySelector('#profile-text'); return [e.selectionStart, document.activeElement === e]; }")
    check(selected == [EDITOR_PROFILE.index("50"), True], "the error's place is selected in the text: %s" % selected)

    # Fix it, as a user would: select the bad value and type another.
    page.evaluate("(at) => document.querySelector('#profile-text').setSelectionRange(at, at + 2)", EDITOR_PROFILE.index("50"))
    page.keyboard.type("2")
    problem.filter(has_text="Valid JSON profile: 2 entries").wait_for(timeout=30_000)
    check(editor.get_attribute("aria-invalid") is None, "the fixed profile validates: " + problem.text_content())

    page.locator("#profile-apply").click()
    message = page.locator("#profile-message")
    message.filter(has_text="Applied").wait_for(timeout=30_000)
    check(re.match(r"Applied #\d+, #\d+ \(seed \d+\)", message.text_content()) is not None, "the profile applies: " + message.text_content())
    check(demo.wait_for("weather: HTTP 503", timeout=30) is not None, "the match on network.send reaches the example's requests")
    check(demo.wait_for("greeting: HELLO, WORLD", timeout=30) is not None, "the sequential provider moves on to shout")
    applied = [entry["point"] + " ← " + entry["provider"] for entry in demo.api("/v1/entries")]

    with page.expect_download(timeout=30_000) as download:
        page.locator("#profile-export").click()
    with open(download.value.path(), encoding="utf-8") as file:
        exported_text = file.read()
    exported = json.loads(exported_text)
    points = [entry["point"] for entry in exported["entries"]]
    check(points == ["demo.greeting", "network.send"] and exported["entries"][1].get("match") == {"path": "/today"}
          and "sequential" in exported["entries"][0]["provider"], "the download is the applied profile: " + json.dumps(exported))

    revert_all(page)
    page.wait_for_function("() => document.querySelector('#banner').textContent.includes('No chaos')", timeout=30_000)
    check(demo.wait_for("greeting: hello, world", timeout=30) is not None, "Revert all restores the greeting")

    editor.fill(exported_text)
    problem.filter(has_text="Valid JSON profile: 2 entries").wait_for(timeout=30_000)
    page.locator("#profile-apply").click()
    message.filter(has_text="Applied").wait_for(timeout=30_000)
    page.locator("#entries tbody tr", has_text="network.send").wait_for(timeout=30_000)
    page.locator("#entries tbody tr", has_text="demo.greeting").wait_for(timeout=30_000)
    check(True, "the exported profile applies again: the entries are back")
    check(demo.wait_for("weather: HTTP 503", timeout=30) is not None, "and the example's requests fail again")
    again = [entry["point"] + " ← " + entry["provider"] for entry in demo.api("/v1/entries")]
    check(again == applied, "the same entries as before the export: %s" % again)

    # The catalogue form of network.send offers the match fields its point declares.
    form = page.locator('details[data-point="network.send"] form[data-item="offline"]')
    check(form.locator('input[name="host"]').count() == 1 and form.locator('input[name="path"]').count() == 1,
          "the network.send forms have the match fields host and path")
    revert_all(page)
    page.wait_for_function("() => document.querySelector('#banner').textContent.includes('No chaos')", timeout=30_000)


def misspelt_point_waits_only_when_asked(page, demo):
    """demo.greting beside the live demo.greeting: refused with "did you mean" until the box
    is ticked; applied then, it waits, and the banner does not count it as active."""
    editor = page.locator("#profile-text")
    problem = page.locator("#profile-problem")
    message = page.locator("#profile-message")
    typo = '{"entries": [{"point": "demo.greting", "provider": {"item": "shout"}}]}'
    editor.fill(typo)
    problem.filter(has_text="did you mean").wait_for(timeout=30_000)
    text = problem.text_content()
    check(text.startswith("line 1, column ") and "did you mean 'demo.greeting'?" in text,
          "a misspelt point is located with did you mean: " + text)
    page.locator("#profile-apply").click()
    message.filter(has_text="Nothing was applied").wait_for(timeout=30_000)
    check(not demo.api("/v1/entries"), "and nothing is applied: " + message.text_content())
    page.get_by_label("Let entries wait for points that do not exist yet").check()
    problem.filter(has_text="waits for points not made yet: demo.greting").wait_for(timeout=30_000)
    check(True, "with the box ticked it validates, waiting: " + problem.text_content())
    page.locator("#profile-apply").click()
    message.filter(has_text="Applied").wait_for(timeout=30_000)
    expected = "Chaos is ON — 0 of 1 entries active, 1 waiting for its point"
    try:
        page.wait_for_function("(t) => document.querySelector('#banner').textContent === t", arg=expected, timeout=30_000)
    except Exception:
        pass  # the check says what it showed
    check(page.locator("#banner").text_content() == expected, "the banner counts it as waiting: " + page.locator("#banner").text_content())
    page.get_by_label("Let entries wait for points that do not exist yet").uncheck()
    editor.fill("")
    revert_all(page)
    page.wait_for_function("() => document.querySelector('#banner').textContent.includes('No chaos')", timeout=30_000)


def audit_lines_in_the_log(page, demo):
    """The event log says what was applied and reverted, and when a lease reverted an entry,
    whoever did it (here the page, then the API)."""
    lines = "#events li.audit"
    page.locator(lines, has_text="applied #").first.wait_for(timeout=10_000)
    page.locator(lines, has_text="reverted #").first.wait_for(timeout=10_000)
    check(True, "the event log has audit lines for applies and reverts: " + page.locator(lines).first.text_content())
    applied = demo.send("POST", "/v1/entries", {"entries": [{"point": "demo.greeting", "provider": {"item": "shout", "lease": "3s"}}]})
    entry = "#%d demo.greeting" % applied["entries"][0]
    page.locator(lines, has_text="lease ended: reverted " + entry).wait_for(timeout=15_000)
    check(True, "an entry reverted by its lease is said so in the event log")

    # The example calls demo.greeting about a hundred times a second: far more acts than the
    # log keeps, and the audit line of the apply stays.
    acts = lambda: int(page.evaluate("() => document.querySelector('#events').dataset.acts || '0'"))
    before = acts()
    applied = demo.send("POST", "/v1/entries", {"entries": [{"point": "demo.greeting", "provider": {"item": "shout"}}]})
    entry = "applied #%d demo.greeting" % applied["entries"][0]
    page.locator(lines, has_text=entry).wait_for(timeout=10_000)
    page.wait_for_function("(n) => Number(document.querySelector('#events').dataset.acts || '0') > n", arg=before + 500, timeout=60_000)
    kept = page.locator("#events li.act").count()
    check(kept == 200, "the log keeps the newest 200 of %d acts: %d" % (acts() - before, kept))
    check(page.locator(lines, has_text=entry).count() == 1, "after them the audit line of the apply is still there")
    filter_ = page.locator("#events-filter")
    filter_.select_option("audit")
    shown = page.evaluate("() => [...document.querySelectorAll('#events li')].filter((l) => !l.hidden).map((l) => l.className)")
    check(shown and set(shown) == {"audit"}, "the filter shows audit lines alone (%d)" % len(shown))
    filter_.select_option("act")
    shown = page.evaluate("() => [...document.querySelectorAll('#events li')].filter((l) => !l.hidden).map((l) => l.className)")
    check(shown and set(shown) == {"act"}, "or acts alone (%d)" % len(shown))
    filter_.select_option("all")
    revert_all(page)
    page.wait_for_function("() => document.querySelector('#banner').textContent.includes('No chaos')", timeout=30_000)


def call_journal_in_the_page(browser, demo):
    """The call journal: recording switched on from the page, rows for the example's calls,
    the point filter, search, and pause."""
    page = browser.new_page(viewport={"width": 1280, "height": 1000})
    rows = "#journal tbody tr"
    visible = "() => Array.from(document.querySelectorAll('#journal tbody tr')).filter((r) => !r.hidden)"
    try:
        page.goto(demo.console_url)
        page.wait_for_function("() => document.querySelector('#journal-state').textContent.includes('calls shown')", timeout=30_000)
        check(page.locator(rows).count() == 0, "the call journal is empty while nothing is recorded")
        page.locator("#journal-record").check()
        page.locator(rows, has_text="demo.greeting").first.wait_for(timeout=30_000)
        first = page.locator(rows).first.text_content()
        check("world" in first and "hello, world" in first, "the journal shows the example's calls with what they returned: " + first)
        check(page.locator(rows, has_text="network.send").count() == 0, "network.send holds secrets: not journaled by 'every point'")
        # Named explicitly, the network point is journaled too, its request redacted by the HAR rules.
        demo.send("PUT", "/v1/journal?limit=0", {"everyPoint": True, "points": ["network.send"]})
        page.locator(rows, has_text="network.send").first.wait_for(timeout=30_000)
        request = page.locator(rows, has_text="network.send").first.text_content()
        check("GET https://weather.example/" in request and "200 (" in request, "a journaled request shows its URL and status: " + request)
        # The filter narrows the journal to one point, for rows already there and rows to come.
        page.locator("#journal-point").select_option("demo.greeting")
        time.sleep(0.5)
        points = page.evaluate(visible + ".map((r) => r.dataset.point)")
        check(points and set(points) == {"demo.greeting"}, "filtering by point shows only demo.greeting (%d rows)" % len(points))
        check(page.locator(rows, has_text="network.send").count() > 0, "the other point's rows are hidden, not dropped")
        page.locator("#journal-point").select_option("")
        # Search: only rows containing the text.
        page.locator("#journal-search").fill("weather.example/today")
        time.sleep(0.3)
        texts = page.evaluate(visible + ".map((r) => r.textContent)")
        check(texts and all("weather.example/today" in text for text in texts), "search keeps the rows with the text (%d)" % len(texts))
        page.locator("#journal-search").fill("")
        # Pause: no new rows, the held calls counted; resume shows them.
        page.locator("#journal-pause").click()
        newest = page.locator(rows).first.get_attribute("data-number")
        time.sleep(1.0)
        check(page.locator(rows).first.get_attribute("data-number") == newest, "pause stops new rows")
        check("held back" in page.locator("#journal-state").text_content(), "the page says calls are held back: " + page.locator("#journal-state").text_content())
        page.locator("#journal-pause").click()
        page.wait_for_function("(n) => Number(document.querySelector('#journal tbody tr').dataset.number) > n", arg=int(newest), timeout=10_000)
        check(True, "resuming shows the calls that came meanwhile")
        page.locator("#journal-record").uncheck()
        demo.send("PUT", "/v1/journal?limit=0", {"everyPoint": False, "points": []})
    finally:
        page.close()


def virtual_time_in_the_page(browser, demo, clock):
    """ConsoleDemo runs on real time: no virtual time shows. ConsoleClockDemo sleeps for an hour at a time on
    virtual time from 2030-01-01: the page shows it, and its buttons move it by what they say."""
    page = browser.new_page()
    try:
        page.goto(demo.console_url)
        page.wait_for_selector('details[data-point="demo.greeting"] > summary', timeout=30_000)
        time.sleep(1.5)  # one refresh of the time
        check(page.locator("#time").is_hidden(), "a program on real time shows no virtual time")
        # Its first list of explorations was in long before: the example explores nothing.
        check(page.locator("#explorations").is_hidden(), "a program that has not explored shows no explorations")
    finally:
        page.close()
    page = browser.new_page()
    try:
        check(clock.wait_for("waiting 1h (1)") is not None, "the clock example sleeps for a virtual hour")
        page.goto(clock.console_url)
        now = page.locator("#time-now")

        def shows(text, label):
            try:
                page.wait_for_function("(text) => document.querySelector('#time-now').textContent === text", arg=text, timeout=30_000)
            except Exception:
                pass  # the check says what it showed
            return check(now.text_content() == text, label + ": " + now.text_content() + " (" + page.locator("#time-detail").text_content() + ")")

        shows("2030-01-01 00:00:00 UTC", "the page shows the virtual time")
        # Revert all keeps the clock: reverted, the program's hour-long sleep would go on in real time.
        page.locator("#entries tbody tr", has_text="system.clock").wait_for(timeout=30_000)
        page.locator("#revert-all").click()
        question = page.locator("#revert-all-question").text_content()
        check("system.clock stay" in question and page.locator("#revert-all-clock").is_visible(),
              "Revert all asks, saying the clock entry stays: " + question)
        page.locator("#revert-all-confirm").click()
        said = page.locator("#entries-message")
        said.filter(has_text="kept").wait_for(timeout=30_000)
        check("system.clock" in said.text_content() and "waits go on in real time" in said.text_content(),
              "the answer says the clock entry was kept and why: " + said.text_content())
        check(page.locator("#entries tbody tr", has_text="system.clock").count() == 1 and clock.api("/v1/time")["running"],
              "the clock entry stays, and the program on virtual time")
        page.get_by_role("button", name="+1 h").click()
        shows("2030-01-01 01:00:00 UTC", "+1 h moves it by an hour")
        check(clock.wait_for("woke (1)", timeout=30) is not None, "the program's hour-long sleep ended with that advance")
        field = page.get_by_label("Advance by")
        # Not a day: the console's server wakes every virtual second (Hummingbird's date cache), so a
        # day is 86,400 steps, a minute or more here.
        field.fill("10m")
        field.press("Enter")
        shows("2030-01-01 01:10:00 UTC", "a typed 10m moves it by ten minutes")
        field.fill("soon")
        field.press("Enter")
        message = page.locator("#time-message")
        # The page says "Advancing by soon…" until the answer comes: wait for the answer.
        try:
            page.wait_for_function(
                "() => { const t = document.querySelector('#time-message').textContent; return t.includes('soon') && !t.startsWith('Advancing'); }",
                timeout=30_000)
        except Exception:
            pass  # the check says what it showed
        check("1h30m" in message.text_content() or "DURATION" in message.text_content(), "a duration it cannot read is refused, saying how to write one: " + message.text_content())
        shows("2030-01-01 01:10:00 UTC", "and time stays where it was")
    finally:
        page.close()


def every_process_in_one_page(browser, demo, clock):
    """The page of every process (served by either example) lists both, with links to their consoles."""
    page = browser.new_page()
    try:
        page.goto(demo.console_url.replace("/console?", "/console/processes?"))
        rows = page.locator("#processes tbody tr")
        for process in (demo, clock):
            page.locator('#processes tbody tr[data-pid="%d"]' % process.process.pid).wait_for(timeout=30_000)
        check(rows.count() >= 2, "the page lists both examples: " + " | ".join(rows.all_text_contents()))
        row = page.locator('#processes tbody tr[data-pid="%d"]' % clock.process.pid)
        check("ConsoleClockDemo" in row.text_content() and "time" in row.text_content(), "with what each offers: " + row.text_content())
        row.get_by_role("link").click()
        page.wait_for_url(clock.console_url.split("?")[0] + "*", timeout=30_000)
        page.wait_for_selector("#time:not([hidden])", timeout=30_000)
        check(page.locator("#time-now").text_content().startswith("2030-"), "its link opens the clock example's console, token and all")
    finally:
        page.close()


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--build-dir", default=os.path.join(ROOT, ".build", "debug"))
    parser.add_argument("--screenshot", default=os.path.join(ROOT, ".build-artifacts", "console.png"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    arguments = parser.parse_args()
    os.makedirs(os.path.dirname(os.path.abspath(arguments.screenshot)), exist_ok=True)

    directory = tempfile.mkdtemp(prefix="chaos-console-browser-")
    demo = Demo(arguments.build_dir, directory)
    try:
        check(demo.wait_for("greeting: hello, world") is not None, "the example greets plainly before chaos")
        with sync_playwright() as playwright:
            browser = playwright.chromium.launch(executable_path=arguments.chromium, args=["--no-sandbox"])
            # en-US writes times 12-hour by default: the page must not.
            page = browser.new_page(viewport={"width": 1280, "height": 1000}, locale="en-US")
            refused = []
            page.on("response", lambda response: refused.append(response.url.split("?")[0] + " " + str(response.status)) if response.status >= 400 else None)
            page.goto(demo.console_url)
            banner = page.locator("#banner")
            page.wait_for_function("() => document.querySelector('#banner').textContent.includes('No chaos')", timeout=30_000)
            check(True, "the console loads with the token URL and shows no chaos")
            page.wait_for_selector('details[data-point="demo.greeting"] > summary')
            page.wait_for_function("() => document.querySelector('#events-state').textContent.startsWith('Following')", timeout=30_000)

            # Keyboard only: Tab from the top of the page to the point, open it, fill in the
            # stutter item's parameter and press its Apply button.
            page.locator("body").focus()
            tab_to(page, "e.tagName === 'SUMMARY' && e.parentElement.dataset.point === 'demo.greeting'", "the demo.greeting point")
            page.keyboard.press("Enter")
            tab_to(page, "e.name === 'times' && e.closest('form').dataset.item === 'stutter' && !e.closest('.modifiers')", "stutter's times field")
            page.keyboard.press("Control+A")
            page.keyboard.type("2")
            tab_to(page, "e.tagName === 'BUTTON' && e.textContent === 'Apply stutter'", "the Apply stutter button")
            page.keyboard.press("Enter")
            message = page.locator('form[data-item="stutter"] .message')
            message.filter(has_text="Applied").wait_for(timeout=30_000)
            check("Applied #" in message.text_content(), "the form reports the new entry: " + message.text_content())
            changed = demo.wait_for("greeting: hello, world-world", timeout=30)
            check(changed is not None, "the running example's behaviour changed: " + str(changed))
            page.wait_for_function("() => document.querySelector('#banner').textContent.startsWith('Chaos is ON')", timeout=30_000)
            check(banner.text_content().startswith("Chaos is ON"), "the banner says chaos is ON")
            page.locator("#events li", has_text="demo.greeting ← stutter(times: 2)").first.wait_for(timeout=30_000)
            check(True, "the act appears in the event log: " + page.locator("#events li").first.text_content())
            page.locator("#entries tbody tr", has_text="stutter(times: 2)").wait_for(timeout=30_000)
            check(True, "the live entry is listed with its counters")

            # The response set: choose another answer with the keyboard.
            select = page.locator('.set[data-set="weather"] select')
            select.focus()
            select.select_option("storm")
            page.keyboard.press("Tab")
            page.keyboard.press("Enter")
            check(demo.wait_for("weather: storm warning", timeout=30) is not None, "selecting 'storm' changes the example's weather")

            # The request journal: the example makes a request with a typo in its path every few seconds; the
            # refused requests show it with the stub it nearly matched and what differed.
            page.locator("#requests tbody tr", has_text="/today").first.wait_for(timeout=30_000)
            check(True, "the request journal lists the example's requests: " + page.locator("#requests tbody tr").first.text_content())
            page.locator("#requests-refused").check()
            # The example repeats its typo every few seconds: any of its rows will do.
            refused_row = page.locator("#requests tbody tr.refused", has_text="/forcast/monday").first
            refused_row.wait_for(timeout=30_000)
            # The table may still show the rows from before the box was ticked until its next refresh.
            try:
                page.wait_for_function(
                    "() => ![...document.querySelectorAll('#requests tbody tr')].some(r => r.textContent.includes('/today'))",
                    timeout=10_000)
                only_refused = True
            except Exception:
                only_refused = False
            check(only_refused, "only refused requests are listed")
            miss = refused_row.locator(".near-miss").first.text_content()
            check("'forecast'" in miss and "path: expected template /forecast/:day, got /forcast/monday" in miss,
                  "a refused request names its nearest stub and why it missed: " + miss)

            time.sleep(1.2)  # one refresh of the counters, for the picture
            page.evaluate("() => document.querySelector('details[data-point=\"demo.greeting\"]').scrollIntoView()")
            page.evaluate("() => window.scrollTo(0, 0)")
            page.screenshot(path=arguments.screenshot, full_page=True)
            check(os.path.getsize(arguments.screenshot) > 10_000, "screenshot saved to " + arguments.screenshot)

            # Revert with the keyboard: Tab to the entry's Revert button.
            page.locator("body").focus()
            tab_to(page, "e.tagName === 'BUTTON' && (e.getAttribute('aria-label') || '').startsWith('Revert entry')", "the Revert button")
            page.keyboard.press("Enter")
            check(demo.wait_for("greeting: hello, world", timeout=30) is not None, "reverting restores the example's greeting")
            page.wait_for_function("() => document.querySelector('#banner').textContent.includes('No chaos')", timeout=30_000)
            check(True, "the banner says no chaos again")

            # A refused form says which field is wrong, not where in the JSON it sent.
            form = page.locator('form[data-item="stutter"]')
            lease = form.locator('input[name="lease"]')
            lease.fill("soon")
            form.locator("button[type=submit]").click()
            message.filter(has_text="lease").wait_for(timeout=30_000)
            text = message.text_content()
            check(text.startswith("lease: ") and not text.startswith("lease: lease") and "console:" not in text and "$." not in text, "a bad lease is reported at its field: " + text)
            check(lease.get_attribute("aria-invalid") == "true", "the lease field is marked invalid")

            # Lease times are 24-hour, as the event log's are.
            lease.fill("1h")
            form.locator("button[type=submit]").click()
            message.filter(has_text="Applied").wait_for(timeout=30_000)
            check(lease.get_attribute("aria-invalid") is None, "the lease field is no longer marked invalid")
            cell = page.locator("#entries tbody tr td.lease").first
            page.wait_for_function("() => /\\d/.test(document.querySelector('#entries tbody td.lease')?.textContent || '')", timeout=30_000)
            lease_text = cell.text_content()
            check(re.fullmatch(r"\d\d:\d\d:\d\d", lease_text) is not None, "the lease ends at a 24-hour time: " + lease_text)

            # Revert all asks first: Cancel keeps everything; confirmed, the form's "Applied #N"
            # goes with the entry.
            page.locator("#revert-all").click()
            check(page.locator("#revert-all-confirm").is_visible() and page.evaluate("() => document.activeElement.id") == "revert-all-confirm",
                  "Revert all asks first, its confirm button focused: " + page.locator("#revert-all-question").text_content())
            page.locator("#revert-all-cancel").click()
            time.sleep(0.5)
            check(len(demo.api("/v1/entries")) == 1 and page.locator("#revert-all-confirm").is_hidden(),
                  "Cancel reverts nothing")
            revert_all(page)
            page.wait_for_function("() => document.querySelector('#banner').textContent.includes('No chaos')", timeout=30_000)
            try:
                page.wait_for_function("() => document.querySelector('form[data-item=\"stutter\"] .message').textContent === ''", timeout=5_000)
            except Exception:
                pass  # the check below says what stayed
            check(message.text_content() == "", "after Revert all no form still says Applied: %r" % message.text_content())
            profile_editor(page, demo)
            misspelt_point_waits_only_when_asked(page, demo)
            unauthorized = [line for line in refused if line.endswith((" 401", " 403", " 404"))]
            check(not unauthorized, "no request of the page was refused (favicon included): %s" % unauthorized)

            audit_lines_in_the_log(page, demo)
            foreign_origin_is_refused(browser, demo)
            call_journal_in_the_page(browser, demo)
            clock = Demo(arguments.build_dir, directory, executable="ConsoleClockDemo")
            try:
                virtual_time_in_the_page(browser, demo, clock)
                every_process_in_one_page(browser, demo, clock)
            finally:
                clock.stop()
            browser.close()
    finally:
        demo.stop()
    print("%d passed, %d failed" % (checks["passed"], checks["failed"]))
    return 0 if checks["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
