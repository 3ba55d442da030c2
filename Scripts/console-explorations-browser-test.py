#!/usr/bin/env python3
"""The console's Explorations panel in a real browser: Debian's chromium driven by Playwright (PyPI).

Explorations are listed in the process that runs them, so the caller explores and serves
the console itself (BrowserTests: `Chaos.explore` over a point whose body fails when the
fault acts at its third or fourth call of four), and gives this script the console's URL,
the exploration's id and the point's name. It opens the console and checks that:
- the Explorations panel is a labelled region, and shows the exploration: 4 of 4
  placements, 2 failing, finished, with its progress bar;
- its failure table lists both failures: the point, the fault, "call K of 4", the error,
  and whether it is flaky;
- each Replay button is named for the failure it replays;
- Replay, pressed with the keyboard, applies the failure's entry: the message says so, and
  the live entries list it;
- pressed again while that entry is live, Replay is refused, saying the replay is applied
  already, and nothing more is applied;
- no request of the page was refused but that one.
The caller then checks, in its own process, that the entry is applied. Exit status 0 when
every check passed.

    python3 Scripts/console-explorations-browser-test.py --url CONSOLE-URL --exploration ID --point NAME [--screenshot PATH]

Needs: chromium at /usr/bin/chromium (apt), playwright (pip); no browser download.
"""
import argparse
import json
import os
import sys
import urllib.request

from playwright.sync_api import sync_playwright

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
checks = {"passed": 0, "failed": 0}


def check(condition, label):
    checks["passed" if condition else "failed"] += 1
    print(("ok   " if condition else "FAIL ") + label, flush=True)
    return condition


def entries(console_url, point):
    """The live entries on `point`, from the endpoint itself."""
    base, token = console_url.split("/console?token=")
    request = urllib.request.Request(base + "/v1/entries", headers={"Authorization": "Bearer " + token})
    with urllib.request.urlopen(request, timeout=30) as response:
        return [entry for entry in json.load(response) if entry["point"] == point]


def explorations_in_the_page(page, arguments):
    exploration = arguments.exploration
    point = arguments.point
    page.goto(arguments.url)
    panel = page.get_by_role("region", name="Explorations")
    panel.wait_for(timeout=30_000)
    check(panel.is_visible(), "the Explorations panel shows, as a labelled region")
    article = page.locator('#explorations-list [data-exploration="%d"]' % exploration)
    article.wait_for(timeout=30_000)
    summary = article.locator(".summary-text")
    expected = "4 of 4 placements · 2 failing · finished"
    try:
        page.wait_for_function(
            "([id, text]) => document.querySelector('[data-exploration=\"' + id + '\"] .summary-text')?.textContent === text",
            arg=[exploration, expected], timeout=30_000)
    except Exception:
        pass  # the check says what it showed
    check(summary.text_content() == expected, "the exploration's progress: " + summary.text_content())
    bar = article.get_by_role("progressbar", name="Placements run of exploration %d" % exploration)
    check(bar.get_attribute("value") == "4" and bar.get_attribute("max") == "4", "with its progress bar, full")
    check(point in article.text_content() and "(4 calls)" in article.text_content(),
          "and the fault it placed, at the calls it targeted")

    rows = article.locator("tbody tr")
    rows.nth(1).wait_for(timeout=30_000)
    texts = [[cell.strip() for cell in row.locator("th, td").all_text_contents()] for row in rows.all()]
    check(len(texts) == 2, "the failure table has a row per failure: %s" % texts)
    for number, (row, call) in enumerate(zip(texts, (3, 4)), start=1):
        check(row[:4] == [str(number), point, row[2], "call %d of 4" % call] and "throwing" in row[2]
              and row[4] == "offline" and row[5] == "no",
              "failure %d: the point, the fault, call %d of 4, the error, not flaky: %s" % (number, call, row))

    button = article.get_by_role("button", name="Replay failure 1 of exploration %d: %s at call 3" % (exploration, point))
    check(button.count() == 1, "each Replay button is named for the failure it replays")
    page.screenshot(path=arguments.screenshot, full_page=True)
    check(os.path.getsize(arguments.screenshot) > 10_000, "screenshot saved to " + arguments.screenshot)

    # With the keyboard: focus the button, press Enter.
    button.focus()
    page.keyboard.press("Enter")
    message = page.locator("#explorations-message")
    message.filter(has_text="applied #").wait_for(timeout=30_000)
    text = message.text_content()
    check(text.startswith("Replayed failure 1 of exploration %d: applied #" % exploration) and "at call 3" in text,
          "Replay says what it applied: " + text)
    check(message.get_attribute("role") == "status" and message.get_attribute("aria-live") == "polite",
          "in a live region")
    page.locator("#entries tbody tr", has_text=point).wait_for(timeout=30_000)
    row = page.locator("#entries tbody tr", has_text=point)
    check(row.count() == 1 and "at call 3" in row.text_content(), "the live entries list it: " + row.text_content())
    applied = entries(arguments.url, point)
    check(len(applied) == 1 and "#%d" % applied[0]["id"] in text, "the endpoint has it live: %s" % applied)

    # Again, while it is live: refused, and nothing more applied.
    button = article.get_by_role("button", name="Replay failure 1 of exploration %d: %s at call 3" % (exploration, point))
    button.click()
    message.filter(has_text="Not replayed").wait_for(timeout=30_000)
    text = message.text_content()
    check("applied already" in text and "DELETE /v1/entries/%d" % applied[0]["id"] in text,
          "Replay again while it is live is refused, saying why: " + text)
    check(len(entries(arguments.url, point)) == 1, "and nothing more is applied")


def main():
    parser = argparse.ArgumentParser()
    parser.add_argument("--url", required=True, help="the console's URL, token included")
    parser.add_argument("--exploration", type=int, required=True, help="the id of an exploration that found two failures")
    parser.add_argument("--point", required=True, help="the point it placed faults on")
    parser.add_argument("--screenshot", default=os.path.join(ROOT, ".build-artifacts", "console-explorations.png"))
    parser.add_argument("--chromium", default="/usr/bin/chromium")
    arguments = parser.parse_args()
    os.makedirs(os.path.dirname(os.path.abspath(arguments.screenshot)), exist_ok=True)

    with sync_playwright() as playwright:
        browser = playwright.chromium.launch(executable_path=arguments.chromium, args=["--no-sandbox"])
        page = browser.new_page(viewport={"width": 1280, "height": 1000}, locale="en-US")
        refused = []
        page.on("response", lambda response: refused.append(response.url.split("?")[0] + " " + str(response.status))
                if response.status >= 400 else None)
        try:
            explorations_in_the_page(page, arguments)
        finally:
            browser.close()
    # The second Replay's 409 is the one refusal expected.
    unexpected = [line for line in refused if not line.endswith("/replay 409")]
    check(not unexpected, "no other request of the page was refused: %s" % unexpected)
    print("%d passed, %d failed" % (checks["passed"], checks["failed"]))
    return 0 if checks["failed"] == 0 else 1


if __name__ == "__main__":
    sys.exit(main())
