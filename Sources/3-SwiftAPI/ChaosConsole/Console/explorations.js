// Explorations in the console: each exploration of the process (GET /v1/explorations:
// those running and the last ten finished) with its progress and the placements that broke
// its body, each with a Replay button that applies the failure's placed entry here
// (POST /v1/explorations/ID/failures/N/replay). Nothing shows while the process has none.
// Uses console.js's helpers.
"use strict";
(function () {
  const { api, element, say, timeOfDay, refreshEntries } = window.chaosConsole;
  const $ = (id) => document.getElementById(id);
  // What each shown exploration was drawn from, as JSON: an exploration is drawn again only
  // when it changed, so that a focused Replay button keeps its focus and a long failure
  // table is not rebuilt every second.
  const drawn = new Map();
  let replaying = false;

  function count(number, one, many) {
    return number + " " + (number === 1 ? one : many);
  }

  // "3 of 8 placements · 2 failing · running": what the exploration has done, in words.
  function progressText(exploration) {
    if (exploration.error) return "ended without exploring";
    if (!exploration.finished && exploration.placements === 0) {
      return "running the baseline: the body once with no fault acting, to count the calls";
    }
    const parts = [exploration.done + " of " + count(exploration.placements, "placement", "placements"),
      exploration.failures.length + " failing"];
    if (exploration.finished) parts.push("finished");
    // Every placement has run: the failing ones run once more, which tells the flaky ones.
    else if (exploration.done >= exploration.placements) parts.push("running each failure again to tell the flaky ones");
    else parts.push("running");
    return parts.join(" · ");
  }

  function draw(exploration) {
    const id = exploration.id;
    const heading = "exploration-" + id + "-heading";
    const failing = exploration.failures.length > 0 || !!exploration.error;
    const summary = "exploration-" + id + "-summary";
    const state = element("p", { className: "exploration-state" + (failing ? " failing" : "") }, [
      // Described by the words beside it: a screen reader then hears the failing count too.
      exploration.placements > 0 ? element("progress", {
        max: String(exploration.placements), value: String(exploration.done),
        "aria-label": "Placements run of exploration " + id, "aria-describedby": summary,
      }) : null,
      element("span", { id: summary, className: "summary-text", text: progressText(exploration) }),
    ]);
    const children = [
      element("h3", { id: heading }, [
        document.createTextNode("Exploration " + id),
        element("span", { className: "hint", text: "started " + timeOfDay(exploration.started) + " · seed " + exploration.seed }),
      ]),
      state,
    ];
    if (exploration.error) children.push(element("p", { className: "exploration-error", text: exploration.error }));
    if (exploration.candidates.length) {
      children.push(element("p", {
        className: "hint",
        text: "Faults placed: " + exploration.candidates.map((candidate) =>
          candidate.point + " ← " + candidate.provider + " (" + count(candidate.calls, "call", "calls") + ")").join("; "),
      }));
    }
    if (exploration.failures.length) {
      children.push(failureTable(exploration));
    } else if (!exploration.error && exploration.placements > 0) {
      children.push(element("p", { className: "empty", text: exploration.finished ? "No placement broke the body." : "No placement has broken the body yet." }));
    }
    return element("article", { className: "exploration", "data-exploration": String(id), "aria-labelledby": heading }, children);
  }

  function failureTable(exploration) {
    const rows = exploration.failures.map((failure) => {
      const label = "Replay failure " + failure.number + " of exploration " + exploration.id + ": " + failure.point + " at call " + failure.call;
      const button = element("button", {
        type: "button", text: "Replay", "aria-label": label,
        "data-key": ["replay", exploration.id, failure.point, failure.provider, failure.call].join("\u0000"),
        onclick: () => replay(exploration, failure),
      });
      // Whether a failure is flaky is known once each failing placement has run again.
      const flaky = !exploration.finished ? "not known yet" : failure.flaky ? "flaky: passed when run again" : "no";
      return element("tr", { "data-number": String(failure.number), className: failure.flaky ? "flaky" : "" }, [
        element("th", { scope: "row", text: String(failure.number) }),
        element("td", { text: failure.point }),
        element("td", { text: failure.provider }),
        element("td", { className: "call", text: "call " + failure.call + " of " + failure.of }),
        element("td", { className: "error", text: failure.error }),
        element("td", { className: "flaky", text: flaky }),
        element("td", { className: "actions" }, [button]),
      ]);
    });
    return element("table", {}, [
      element("caption", { className: "visually-hidden", text: "The placements that broke exploration " + exploration.id + ", each with a Replay button" }),
      element("thead", {}, [element("tr", {}, ["Failure", "Point", "Fault", "Placed at", "Error", "Flaky", "Replay"].map((name) =>
        element("th", { scope: "col", text: name })))]),
      element("tbody", {}, rows),
    ]);
  }

  // Draws the explorations, newest first; answers whether one is running.
  function show(explorations) {
    $("explorations").hidden = explorations.length === 0;
    const list = $("explorations-list");
    const active = document.activeElement;
    const focused = active && list.contains(active) ? active.dataset.key : null;
    const listed = new Set();
    for (const exploration of explorations) {
      const key = String(exploration.id);
      listed.add(key);
      const text = JSON.stringify(exploration);
      if (drawn.get(key) === text) continue;
      drawn.set(key, text);
      const fresh = draw(exploration);
      const old = list.querySelector('[data-exploration="' + key + '"]');
      if (old) old.replaceWith(fresh); else list.prepend(fresh);
    }
    for (const node of Array.from(list.children)) {
      if (listed.has(node.dataset.exploration)) continue;
      drawn.delete(node.dataset.exploration);
      node.remove();
    }
    if (focused && !list.contains(document.activeElement)) {
      const again = Array.from(list.querySelectorAll("[data-key]")).find((node) => node.dataset.key === focused);
      if (again) again.focus();
    }
    return explorations.some((exploration) => !exploration.finished);
  }

  async function refresh() {
    try {
      return show(await api("GET", "/v1/explorations"));
    } catch (_) {
      return false; // the banner says when the process is gone
    }
  }

  // About once a second while an exploration runs; less often otherwise, to notice the next.
  async function poll() {
    const running = await refresh();
    setTimeout(poll, running ? 1000 : 3000);
  }

  async function replay(exploration, failure) {
    if (replaying) return;
    replaying = true;
    const message = $("explorations-message");
    // The failure's call and point go along: should the list the page shows be out of date,
    // the endpoint refuses rather than replay another failure.
    const path = "/v1/explorations/" + exploration.id + "/failures/" + failure.number + "/replay?call=" + failure.call +
      "&point=" + encodeURIComponent(failure.point);
    try {
      const applied = await api("POST", path);
      say(message, "Replayed failure " + failure.number + " of exploration " + exploration.id + ": applied #" +
        applied.entries.join(", #") + " " + failure.replay + " (seed " + applied.seed + "). Its fault acts at call " +
        failure.call + " of those the entry targets from now on.", true);
    } catch (error) {
      say(message, "Not replayed: " + error.message, false);
    } finally {
      replaying = false;
    }
    await Promise.all([refreshEntries(), refresh()]);
  }

  poll();
})();
