// The chaos console: plain JavaScript, no build step. Everything it shows comes from the
// control API (/v1/…) of the process that served it, with the token from the page's URL.
// Text from the program is always set as text (textContent), never parsed as HTML.
"use strict";
(function () {
  const token = new URLSearchParams(location.search).get("token") || "";
  const $ = (id) => document.getElementById(id);
  let serial = 0;

  function element(tag, properties, children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(properties || {})) {
      if (key === "text") node.textContent = value;
      else if (key === "className") node.className = value;
      else if (key.startsWith("on")) node.addEventListener(key.slice(2), value);
      else if (value !== undefined && value !== null && value !== false) node.setAttribute(key, value === true ? "" : value);
    }
    for (const child of children || []) if (child) node.append(child);
    return node;
  }

  async function api(method, path, body, contentType) {
    const options = { method, headers: { Authorization: "Bearer " + token } };
    if (body !== undefined) {
      options.headers["Content-Type"] = contentType || "application/json";
      options.body = typeof body === "string" ? body : JSON.stringify(body);
    }
    const response = await fetch(path, options);
    const text = await response.text();
    let data = null;
    try { data = text ? JSON.parse(text) : null; } catch (_) { data = null; }
    if (!response.ok) {
      const error = (data && data.error) || { kind: "http", message: "HTTP " + response.status };
      const failure = new Error((error.subject ? error.subject + ": " : "") + error.message);
      failure.kind = error.kind;
      failure.subject = error.subject;
      failure.detail = error.message;
      failure.location = error.location;
      throw failure;
    }
    return data;
  }

  function say(node, text, ok) {
    node.textContent = text;
    node.className = "message " + (ok ? "ok" : "error");
    delete node.dataset.entries;
  }

  // The time of day, 24-hour and the same in every locale: the lease column and the event
  // log both show times this way.
  function timeOfDay(value, milliseconds) {
    const date = new Date(value);
    const two = (number) => String(number).padStart(2, "0");
    const text = two(date.getHours()) + ":" + two(date.getMinutes()) + ":" + two(date.getSeconds());
    return milliseconds ? text + "." + String(date.getMilliseconds()).padStart(3, "0") : text;
  }

  // Where a refused form's error is, said as the form says it. The endpoint locates
  // profile errors in the JSON the page sent ("console:1:82 at $.entries[0].provider.lease");
  // the page wrote that JSON from the form, so it knows the field each path came from.
  // `parameters` and `modifiers` map names to the form's inputs.
  function fieldError(error, parameters, modifiers, matches) {
    const match = /^.*:\d+:\d+ at \$\.entries\[\d+\](.*)$/.exec(error.subject || "");
    if (!match) return { text: error.message };
    const parameter = /^\.provider\.parameters\.([^.[]+)/.exec(match[1])?.[1];
    const modifier = /^\.provider\.([^.[]+)$/.exec(match[1])?.[1];
    const condition = /^\.match\.([^.[]+)/.exec(match[1])?.[1];
    const name = parameter || modifier || condition;
    const input = parameter ? parameters.get(parameter) : modifier ? modifiers.get(modifier)
      : condition ? matches.get(condition) : undefined;
    const named = !input || error.detail.startsWith(name + ":") || error.detail.startsWith(name + " ");
    return { text: (named ? "" : name + ": ") + error.detail, input };
  }

  // MARK: Status and entries

  // The entries as the table shows them (what Revert all asks about).
  let shownEntries = [];

  async function refreshEntries() {
    let status, entries;
    try {
      [status, entries] = await Promise.all([api("GET", "/v1/status"), api("GET", "/v1/entries")]);
    } catch (error) {
      $("banner").textContent = "Not connected: " + error.message;
      $("banner").className = "banner on";
      return;
    }
    const banner = $("banner");
    if (status.enabledEntries > 0) {
      banner.textContent = "Chaos is ON — " + chaosEntriesSummary(status);
      banner.className = "banner on";
    } else {
      banner.textContent = status.entries > 0 ? "Chaos is applied but switched off (" + status.entries + " entries disabled)" : "No chaos applied";
      banner.className = "banner off";
    }
    $("process").textContent = status.program + " · pid " + status.pid + " · " + location.host + (status.waiting ? " · waiting for go" : "");
    renderEntries(entries);
    auditEntries(entries);
  }

  // MARK: Audit lines

  // The event log also says when an entry is applied, reverted, switched on or off, or
  // reverted by its lease, whoever did it (this page, chaos ctl, the program itself): each
  // refresh of the entries is compared with the one before.
  let audited = null;

  function auditEntries(entries) {
    const current = new Map(entries.map((entry) => [entry.id, entry]));
    if (audited) {
      for (const entry of entries) {
        const before = audited.get(entry.id);
        if (!before) auditLine("applied #" + entry.id + " " + entry.point + " ← " + entry.provider + (entry.leaseEnds ? " (lease ends " + timeOfDay(entry.leaseEnds) + ")" : ""));
        else if (before.enabled !== entry.enabled) auditLine((entry.enabled ? "enabled #" : "disabled #") + entry.id + " " + entry.point);
      }
      for (const [id, entry] of audited) {
        if (current.has(id)) continue;
        const leaseEnded = entry.leaseEnds && new Date(entry.leaseEnds).getTime() <= Date.now() + 1000;
        auditLine((leaseEnded ? "lease ended: reverted #" : "reverted #") + id + " " + entry.point + " ← " + entry.provider);
      }
    }
    audited = current;
  }

  function auditLine(text) {
    logLine("audit", timeOfDay(Date.now(), true) + "  " + text);
  }

  // MARK: Event log

  // Acts and audit lines share the list but not its bound: each kind keeps its newest 200,
  // so that a hundred acts a second cannot push out the line saying who applied the entry.
  const eventLog = { limit: 200, lines: { act: [], audit: [] }, acts: 0 };

  function logLine(kind, text) {
    const list = $("events");
    const line = element("li", { className: kind, text });
    line.hidden = !eventShown(kind);
    list.prepend(line);
    const kept = eventLog.lines[kind];
    kept.push(line);
    while (kept.length > eventLog.limit) kept.shift().remove();
    if (kind === "act") list.dataset.acts = String(++eventLog.acts);
  }

  function eventShown(kind) {
    const shown = $("events-filter").value;
    return shown === "all" || shown === kind;
  }

  $("events-filter").addEventListener("change", () => {
    for (const line of $("events").children) line.hidden = !eventShown(line.className);
  });

  function renderEntries(entries) {
    shownEntries = entries;
    const table = $("entries");
    const body = table.tBodies[0];
    const focused = document.activeElement && document.activeElement.dataset ? document.activeElement.dataset.key : null;
    body.replaceChildren();
    table.hidden = entries.length === 0;
    $("entries-empty").hidden = entries.length !== 0;
    $("revert-all").disabled = entries.length === 0;
    if (entries.length === 0 && !$("revert-all-ask").hidden) closeRevertAll(false);
    // A form's "Applied #N" stands while one of its entries is live, and goes with them
    // (reverted here, by chaos ctl, or at the end of a lease).
    const live = new Set(entries.map((entry) => String(entry.id)));
    for (const message of document.querySelectorAll(".item .message[data-entries]")) {
      if (!message.dataset.entries.split(",").some((id) => live.has(id))) say(message, "", true);
    }
    for (const entry of entries) {
      const last = entry.lastAct ? "call " + entry.lastAct.callIndex + ", entry seed " + entry.lastAct.entrySeed : "never fired";
      const toggle = element("button", {
        type: "button", "data-key": "toggle-" + entry.id, "aria-label": (entry.enabled ? "Disable" : "Enable") + " entry #" + entry.id,
        text: entry.enabled ? "Disable" : "Enable",
        onclick: () => act("POST", "/v1/entries/" + entry.id + "/" + (entry.enabled ? "disable" : "enable"), (entry.enabled ? "Disabled" : "Enabled") + " #" + entry.id),
      });
      const revert = element("button", {
        type: "button", "data-key": "revert-" + entry.id, "aria-label": "Revert entry #" + entry.id, text: "Revert",
        onclick: () => act("DELETE", "/v1/entries/" + entry.id, "Reverted #" + entry.id),
      });
      const row = element("tr", { className: entry.enabled ? "" : "disabled" }, [
        element("th", { scope: "row", text: "#" + entry.id }),
        element("td", { text: entry.point }),
        element("td", { text: entry.provider }),
        element("td", { text: entry.problem ? "not applied: " + entry.problem : entry.pending ? "pending (no such point yet)" : entry.enabled ? "on" : "off" }),
        element("td", { className: "number", text: String(entry.seen) }),
        element("td", { className: "number", text: String(entry.acted) }),
        element("td", { className: "number", text: String(entry.passed) }),
        element("td", { text: last }),
        element("td", { className: "lease", text: entry.leaseEnds ? timeOfDay(entry.leaseEnds, false) : "—" }),
        element("td", { className: "actions" }, [toggle, revert]),
      ]);
      body.append(row);
    }
    if (focused) {
      const again = body.querySelector('[data-key="' + focused + '"]');
      if (again) again.focus();
    }
  }

  async function act(method, path, done) {
    try {
      await api(method, path);
      say($("entries-message"), done, true);
    } catch (error) {
      say($("entries-message"), error.message, false);
    }
    await refreshEntries();
  }

  // MARK: Points and catalogue forms

  async function loadPoints() {
    const points = await api("GET", "/v1/points");
    const container = $("points");
    container.replaceChildren();
    if (points.length === 0) container.append(element("p", { className: "empty", text: "This program has no injection points." }));
    for (const point of points) {
      const items = element("div", { className: "items" });
      for (const item of point.items) items.append(itemForm(point, item));
      if (point.items.length === 0) items.append(element("p", { className: "empty", text: "No catalogue items: apply profiles with constants through chaos ctl." }));
      container.append(element("details", { className: "point", "data-point": point.name }, [
        element("summary", {}, [document.createTextNode(point.name), element("code", { text: point.signature })]),
        items,
      ]));
    }
  }

  function field(id, labelText, input, hint) {
    return element("div", { className: "field" }, [
      element("label", { for: id, text: labelText }),
      input,
      hint ? element("small", { id: id + "-hint", text: hint }) : null,
    ]);
  }

  function parameterInput(id, parameter) {
    const hintId = id + "-hint";
    const fallback = parameter.default;
    if (parameter.kind === "boolean") {
      return element("input", { id, type: "checkbox", name: parameter.name, checked: fallback === true, "aria-describedby": hintId });
    }
    if (parameter.kind === "choice") {
      const select = element("select", { id, name: parameter.name, "aria-describedby": hintId });
      if (parameter.requirement === "optional") select.append(element("option", { value: "", text: "(none)" }));
      for (const choice of parameter.choices || []) select.append(element("option", { value: choice, text: choice, selected: choice === fallback }));
      return select;
    }
    const numeric = parameter.kind === "number" || parameter.kind === "integer";
    return element("input", {
      id, name: parameter.name, type: numeric ? "number" : "text",
      step: parameter.kind === "integer" ? "1" : numeric ? "any" : null,
      min: parameter.minimum, max: parameter.maximum,
      value: fallback === undefined || fallback === null ? "" : Array.isArray(fallback) ? fallback.join(", ") : String(fallback),
      required: parameter.requirement === "required",
      placeholder: { duration: "e.g. 250ms", offset: "e.g. -1d", date: "e.g. 2061-07-28T00:00:00Z", strings: "a, b, c" }[parameter.kind] || null,
      "aria-describedby": hintId,
    });
  }

  function itemForm(point, item) {
    const id = "f" + (++serial);
    const message = element("p", { className: "message", role: "status", "aria-live": "polite" });
    const inputs = [];
    const fields = item.parameters.map((parameter) => {
      const input = parameterInput(id + "-" + parameter.name, parameter);
      inputs.push([parameter, input]);
      const hint = [parameter.summary, parameter.unit ? "unit: " + parameter.unit : "", parameter.requirement === "optional" ? "optional" : ""].filter(Boolean).join(" · ");
      return field(input.id, parameter.name, input, hint);
    });
    // The conditions the point's `match` takes: all optional, an empty one is left out.
    const matchInputs = (point.match || []).map((parameter) => {
      const optional = Object.assign({}, parameter, { requirement: "optional", default: undefined });
      if (parameter.kind === "boolean") Object.assign(optional, { kind: "choice", choices: ["true", "false"] });
      const input = parameterInput(id + "-match-" + parameter.name, optional);
      return [parameter, input];
    });
    const matchFields = matchInputs.map(([parameter, input]) =>
      field(input.id, parameter.name, input, [parameter.summary, "optional"].filter(Boolean).join(" · ")));
    const probability = element("input", { id: id + "-probability", type: "number", min: 0, max: 1, step: "any", name: "probability" });
    const times = element("input", { id: id + "-times", type: "number", min: 1, step: 1, name: "times" });
    const lease = element("input", { id: id + "-lease", type: "text", name: "lease", placeholder: "e.g. 30s" });
    const form = element("form", {
      className: "item", "data-item": item.name, "aria-label": item.name + " on " + point.name,
      onsubmit: async (event) => {
        event.preventDefault();
        const parameters = {};
        for (const [parameter, input] of inputs) {
          let value;
          if (parameter.kind === "boolean") value = input.checked;
          else if (input.value.trim() === "") continue;
          else if (parameter.kind === "number" || parameter.kind === "integer") value = Number(input.value);
          else if (parameter.kind === "strings") value = input.value.split(",").map((part) => part.trim()).filter(Boolean);
          else value = input.value;
          parameters[parameter.name] = value;
        }
        const provider = { item: item.name, parameters };
        if (probability.value.trim() !== "") provider.probability = Number(probability.value);
        if (times.value.trim() !== "") provider.times = Number(times.value);
        if (lease.value.trim() !== "") provider.lease = lease.value.trim();
        const match = {};
        for (const [parameter, input] of matchInputs) {
          const text = input.value.trim();
          if (text === "") continue;
          if (parameter.kind === "boolean") match[parameter.name] = text === "true";
          else if (parameter.kind === "number" || parameter.kind === "integer") match[parameter.name] = Number(text);
          else if (parameter.kind === "strings") match[parameter.name] = text.split(",").map((part) => part.trim()).filter(Boolean);
          else match[parameter.name] = text;
        }
        const named = new Map(inputs.map(([parameter, input]) => [parameter.name, input]));
        const modifiers = new Map([["probability", probability], ["times", times], ["lease", lease]]);
        const matches = new Map(matchInputs.map(([parameter, input]) => [parameter.name, input]));
        for (const input of [...named.values(), ...modifiers.values(), ...matches.values()]) input.removeAttribute("aria-invalid");
        const entry = { point: point.name, provider };
        if (Object.keys(match).length > 0) entry.match = match;
        try {
          const applied = await api("POST", "/v1/entries?source=console", { entries: [entry] });
          say(message, "Applied " + applied.entries.map((entry) => "#" + entry).join(", ") + " to " + point.name, true);
          message.dataset.entries = applied.entries.join(",");
        } catch (error) {
          const located = fieldError(error, named, modifiers, matches);
          say(message, located.text, false);
          if (located.input) located.input.setAttribute("aria-invalid", "true");
        }
        await refreshEntries();
      },
    }, [
      element("fieldset", {}, [
        element("legend", { text: item.name }),
        item.summary ? element("p", { className: "summary", text: item.summary }) : null,
        ...fields,
        matchFields.length ? element("div", { className: "matches" }, [
          element("p", { className: "summary", text: "Only calls that match (all optional):" }), ...matchFields]) : null,
        element("div", { className: "modifiers" }, [
          field(probability.id, "probability", probability, "0…1, optional"),
          field(times.id, "times", times, "acts this many times, optional"),
          field(lease.id, "lease", lease, "reverts itself after, optional"),
        ]),
        element("button", { type: "submit", className: "primary", text: "Apply " + item.name }),
        message,
      ]),
    ]);
    return form;
  }

  // MARK: Profile editor

  // The editor's text goes to the endpoint as it is: JSON, or a CHAOS line (text/plain).
  // The endpoint checks it with the parsers and checks an apply uses, and locates each error
  // in this text (line, column, and the position to select), never in a place of its own.
  const editor = $("profile-text");
  let checking = 0;
  let checkTimer = null;

  // Entries for points the program has not made yet wait for them; one whose name is a
  // couple of letters off a live point's waits only when the box says so.
  function profileQuery() {
    return "?source=editor" + ($("profile-allow-pending").checked ? "&allowPending=true" : "");
  }

  function profileType(text) {
    return text.trimStart().startsWith("{") ? "application/json" : "text/plain; charset=utf-8";
  }

  function selectProblem(place) {
    editor.focus();
    const end = Math.min(place.offset + 1, editor.value.length);
    editor.setSelectionRange(Math.min(place.offset, end), end);
  }

  // A refusal under the text: "line 3, column 17" (a button that selects the place), what
  // is wrong and, for JSON, the path of the value.
  function showProblem(detail) {
    const node = $("profile-problem");
    node.className = "message error";
    editor.setAttribute("aria-invalid", "true");
    const place = detail.location;
    if (!place) {
      node.replaceChildren(document.createTextNode(detail.message));
      return;
    }
    node.replaceChildren(
      element("button", {
        type: "button", className: "place", text: "line " + place.line + ", column " + place.column,
        "aria-label": "Select line " + place.line + ", column " + place.column + " in the profile",
        onclick: () => selectProblem(place),
      }),
      document.createTextNode(": " + detail.message + (place.path ? " (at " + place.path + ")" : "")));
  }

  async function checkProfile() {
    const text = editor.value;
    const mine = ++checking;
    const node = $("profile-problem");
    if (text.trim() === "") {
      node.replaceChildren();
      editor.removeAttribute("aria-invalid");
      return;
    }
    let result;
    try {
      result = await api("POST", "/v1/profile/validate" + profileQuery(), text, profileType(text));
    } catch (error) {
      if (mine === checking) showProblem({ message: "Not checked: " + error.message });
      return;
    }
    if (mine !== checking) return;  // a newer text is being checked
    if (!result.valid) {
      showProblem(result.error);
      return;
    }
    editor.removeAttribute("aria-invalid");
    node.className = "message ok";
    const waiting = result.waiting && result.waiting.length ? "; waits for points not made yet: " + result.waiting.join(", ") : "";
    node.replaceChildren(document.createTextNode("Valid " + (result.format === "chaos" ? "CHAOS line" : "JSON profile") +
      ": " + result.entries + (result.entries === 1 ? " entry" : " entries") + waiting));
  }

  editor.addEventListener("input", () => {
    clearTimeout(checkTimer);
    checkTimer = setTimeout(checkProfile, 300);
  });
  $("profile-allow-pending").addEventListener("change", checkProfile);

  $("profile-apply").addEventListener("click", async () => {
    const text = editor.value;
    clearTimeout(checkTimer);
    try {
      const applied = await api("POST", "/v1/entries" + profileQuery(), text, profileType(text));
      say($("profile-message"), "Applied " + (applied.entries.map((entry) => "#" + entry).join(", ") || "no entry") + " (seed " + applied.seed + ")", true);
      checkProfile();
    } catch (error) {
      say($("profile-message"), "Nothing was applied: " + (error.location ? "the profile has an error (above)" : error.message), false);
      if (error.location) {
        showProblem({ message: error.detail, location: error.location });
        selectProblem(error.location);
      }
    }
    await refreshEntries();
  });

  // The applied state as a profile, laid out for reading; the endpoint refuses when an entry
  // cannot be written as one, and says which.
  async function appliedProfile() {
    return JSON.stringify(await api("GET", "/v1/profile"), null, 2) + "\n";
  }

  $("profile-export").addEventListener("click", async () => {
    let text;
    try {
      text = await appliedProfile();
    } catch (error) {
      say($("profile-message"), "Not exported: " + error.message, false);
      return;
    }
    const url = URL.createObjectURL(new Blob([text], { type: "application/json" }));
    const link = element("a", { href: url, download: "chaos-profile.json" });
    document.body.append(link);
    link.click();
    link.remove();
    setTimeout(() => URL.revokeObjectURL(url), 10_000);
    say($("profile-message"), "Downloaded the applied profile (chaos-profile.json)", true);
  });

  $("profile-load").addEventListener("click", async () => {
    try {
      editor.value = await appliedProfile();
      say($("profile-message"), "The applied profile is in the editor", true);
      checkProfile();
    } catch (error) {
      say($("profile-message"), "Not exported: " + error.message, false);
    }
  });

  $("profile-file").addEventListener("change", async (event) => {
    const file = event.target.files && event.target.files[0];
    if (!file) return;
    editor.value = await file.text();
    say($("profile-message"), "Loaded " + file.name, true);
    checkProfile();
  });

  // MARK: Response sets

  async function loadSets() {
    let sets;
    try { sets = await api("GET", "/v1/response-sets"); } catch (_) { sets = []; }
    const container = $("sets");
    container.replaceChildren();
    $("sets-empty").hidden = sets.length !== 0;
    for (const set of sets) {
      const id = "s" + (++serial);
      const select = element("select", { id });
      for (const name of set.responses) select.append(element("option", { value: name, text: name, selected: name === set.selected }));
      const message = element("p", { className: "message", role: "status", "aria-live": "polite" });
      const current = element("span", { text: "selected: " + set.selected });
      container.append(element("div", { className: "set", "data-set": set.name }, [
        element("h3", { text: set.name }),
        element("p", { className: "hint", text: set.matcher }),
        element("label", { for: id, text: "Response" }),
        select,
        element("button", {
          type: "button", text: "Select", "aria-label": "Select the response for " + set.name,
          onclick: async () => {
            try {
              const updated = await api("PUT", "/v1/response-sets/" + encodeURIComponent(set.name), { response: select.value });
              current.textContent = "selected: " + updated.selected;
              say(message, set.name + " answers " + updated.selected, true);
            } catch (error) {
              say(message, error.message, false);
            }
          },
        }),
        document.createTextNode(" "),
        current,
        message,
      ]));
    }
  }

  // MARK: Requests

  // The newest 50 network requests (only the refused ones when asked), newest first; a
  // refused request lists the stubs it nearly matched and what differed.
  async function refreshRequests() {
    const refusedOnly = $("requests-refused").checked;
    let journal;
    try {
      journal = await api("GET", "/v1/requests?limit=50" + (refusedOnly ? "&answer=refused" : ""));
    } catch (error) {
      $("requests-state").textContent = "The request journal cannot be read: " + error.message;
      return;
    }
    const table = $("requests");
    table.hidden = journal.requests.length === 0;
    $("requests-state").textContent = journal.capacity === 0 ? "The request journal is off."
      : journal.requests.length === 0 ? (refusedOnly ? "No request was refused." : "No network request yet.")
      : journal.recorded + " requests so far (the journal keeps " + journal.capacity + "); the newest " +
        (refusedOnly ? "refused " : "") + "are listed first.";
    const rows = journal.requests.slice().reverse().map((request) => {
      const outcome = request.status !== undefined && request.status !== null
        ? request.status + " · " + request.bytes + " bytes" : request.error ? "failed" : "";
      const misses = (request.nearMisses || []).map((miss) => element("li", { className: "near-miss" }, [
        element("span", { text: "'" + miss.stub + "' (" + miss.matcher + "), " +
          miss.satisfied + " of " + miss.criteria + " criteria met" }),
        element("ul", {}, miss.differences.map((difference) => element("li", { text: difference.description }))),
      ]));
      return element("tr", { className: request.answer, "data-number": String(request.number) }, [
        element("td", { className: "number", text: "#" + request.number }),
        element("td", { text: timeOfDay(request.date, true) }),
        element("td", { text: request.method }),
        element("td", { className: "url", text: request.url }),
        element("td", {}, [
          element("span", { text: request.summary }),
          misses.length ? element("ol", { className: "near-misses", "aria-label": "Nearest stubs" }, misses) : null,
        ]),
        element("td", { text: outcome, title: request.error || undefined }),
        element("td", { className: "number", text: request.milliseconds.toFixed(1) + " ms" }),
      ]);
    });
    table.tBodies[0].replaceChildren(...rows);
  }

  // MARK: Events

  function followEvents() {
    const source = new EventSource("/v1/events?token=" + encodeURIComponent(token));
    source.addEventListener("open", () => { $("events-state").textContent = "Following the event stream."; });
    source.addEventListener("error", () => { $("events-state").textContent = "The event stream is interrupted; reconnecting…"; });
    source.addEventListener("act", (message) => {
      let event;
      try { event = JSON.parse(message.data); } catch (_) { return; }
      const time = timeOfDay(event.date, true);
      const text = time + "  " + (event.entry ? "#" + event.entry + " " : "") + event.point + " ← " + event.provider +
        "  call " + event.callIndex + "  entry seed " + event.entrySeed;
      logLine("act", text);
    });
  }

  // MARK: Call journal

  // Calls come over /v1/journal?follow; the newest 500 are kept as rows. Filter and search
  // hide rows (and apply to rows that come later); pause holds new calls back until resumed.
  const journal = { paused: false, held: [], points: new Set(), limit: 500 };

  function journalRowText(call) {
    const chaos = call.entry ? (call.acted ? "acted" : "passed") + " by #" + call.entry + " on call " + call.callIndex +
      " (seed " + call.entrySeed + ")" : "no entry";
    const has = (value) => value !== undefined && value !== null;
    let returned = has(call.error) ? "threw " + call.error : (call.returned ?? "");
    // A response renders its own status and size; an error that carries them gets them added.
    if (!has(call.returned) && has(call.status)) returned += "  [" + call.status + (has(call.bytes) ? ", " + call.bytes + " bytes" : "") + "]";
    return { chaos, returned };
  }

  function journalMatches(row) {
    const point = $("journal-point").value;
    const search = $("journal-search").value.trim().toLowerCase();
    if (point && row.dataset.point !== point) return false;
    return !search || row.textContent.toLowerCase().includes(search);
  }

  function journalFilter() {
    let shown = 0;
    for (const row of $("journal").tBodies[0].rows) {
      row.hidden = !journalMatches(row);
      if (!row.hidden) shown += 1;
    }
    return shown;
  }

  function journalState() {
    const rows = $("journal").tBodies[0].rows.length;
    const shown = Array.from($("journal").tBodies[0].rows).filter((row) => !row.hidden).length;
    let text = shown + " of " + rows + " calls shown";
    if (journal.paused) text += "; paused, " + journal.held.length + " new calls held back";
    $("journal-state").textContent = text + ".";
  }

  function journalAdd(call) {
    if (!journal.points.has(call.point)) {
      journal.points.add(call.point);
      $("journal-point").append(element("option", { value: call.point, text: call.point }));
    }
    const { chaos, returned } = journalRowText(call);
    const row = element("tr", { className: call.acted ? "acted" : "" }, [
      element("td", { className: "number", text: "#" + call.number }),
      element("td", { text: timeOfDay(call.date, true) }),
      element("td", { text: call.point }),
      element("td", { text: call.arguments }),
      element("td", { text: returned }),
      element("td", { text: chaos }),
    ]);
    row.dataset.point = call.point;
    row.dataset.number = String(call.number);
    row.hidden = !journalMatches(row);
    const body = $("journal").tBodies[0];
    body.prepend(row);
    while (body.rows.length > journal.limit) body.lastElementChild.remove();
  }

  function followJournal() {
    const source = new EventSource("/v1/journal?follow&limit=200&token=" + encodeURIComponent(token));
    source.addEventListener("error", () => { $("journal-state").textContent = "The call journal stream is interrupted; reconnecting…"; });
    source.addEventListener("open", () => {
      // A reconnect sends the kept calls again: start from an empty table.
      $("journal").tBodies[0].replaceChildren();
      journal.held = [];
      journalState();
    });
    source.addEventListener("call", (message) => {
      let call;
      try { call = JSON.parse(message.data); } catch (_) { return; }
      if (journal.paused) {
        journal.held.push(call);
        if (journal.held.length > journal.limit) journal.held.shift();
      } else {
        journalAdd(call);
      }
      journalState();
    });
  }

  async function loadJournalSelection() {
    try {
      const state = await api("GET", "/v1/journal?limit=0");
      $("journal-record").checked = state.selection.everyPoint;
    } catch (_) { /* the stream says when the endpoint is away */ }
  }

  $("journal-record").addEventListener("change", async (event) => {
    try {
      const state = await api("GET", "/v1/journal?limit=0");
      await api("PUT", "/v1/journal?limit=0", { everyPoint: event.target.checked, points: state.selection.points });
    } catch (error) {
      $("journal-state").textContent = "Could not switch the journal: " + error.message;
    }
  });
  $("journal-point").addEventListener("change", () => { journalFilter(); journalState(); });
  $("journal-search").addEventListener("input", () => { journalFilter(); journalState(); });
  $("journal-pause").addEventListener("click", (event) => {
    journal.paused = !journal.paused;
    event.target.textContent = journal.paused ? "Resume" : "Pause";
    event.target.setAttribute("aria-pressed", String(journal.paused));
    if (!journal.paused) {
      for (const call of journal.held) journalAdd(call);
      journal.held = [];
    }
    journalState();
  });
  $("journal-clear").addEventListener("click", () => {
    $("journal").tBodies[0].replaceChildren();
    journal.held = [];
    journalState();
  });

  // MARK: Revert all

  // Revert all asks first, saying how many entries go. Entries on system.clock stay unless
  // the box is ticked: a program on virtual time waits on that clock, and reverted mid-wait
  // its waits go on in real time (the endpoint keeps them too, and says so).
  function openRevertAll() {
    const clock = shownEntries.filter((entry) => entry.point === "system.clock").length;
    const others = shownEntries.length - clock;
    const clockNote = clock === 0 ? ""
      : (clock === 1 ? " The entry on system.clock stays" : " The " + clock + " entries on system.clock stay") +
        " unless you tick the box below: the program's waits would go on in real time.";
    $("revert-all-question").textContent =
      (others === 0 ? "Nothing else to revert." : "Revert " + (others === 1 ? "1 entry" : others + " entries") + "?") + clockNote;
    $("revert-all-clock").checked = false;
    $("revert-all-clock-choice").hidden = clock === 0;
    $("revert-all-ask").hidden = false;
    $("revert-all").setAttribute("aria-expanded", "true");
    $("revert-all-confirm").focus();
  }

  function closeRevertAll(refocus) {
    $("revert-all-ask").hidden = true;
    $("revert-all").setAttribute("aria-expanded", "false");
    if (refocus) $("revert-all").focus();
  }

  $("revert-all").addEventListener("click", () => {
    if ($("revert-all-ask").hidden) openRevertAll(); else closeRevertAll(true);
  });
  $("revert-all-cancel").addEventListener("click", () => closeRevertAll(true));
  $("revert-all-ask").addEventListener("keydown", (event) => {
    if (event.key === "Escape") closeRevertAll(true);
  });
  $("revert-all-confirm").addEventListener("click", async () => {
    const includeClock = $("revert-all-clock").checked;
    closeRevertAll(true);
    try {
      const reverted = await api("DELETE", "/v1/entries" + (includeClock ? "?includeClock=true" : ""));
      const ids = reverted.entries.map((id) => "#" + id).join(", ");
      say($("entries-message"), (ids ? "Reverted " + ids : "Nothing was reverted") + (reverted.note ? "; " + reverted.note : ""), true);
    } catch (error) {
      say($("entries-message"), error.message, false);
    }
    await refreshEntries();
  });
  $("clear-events").addEventListener("click", () => {
    $("events").replaceChildren();
    eventLog.lines = { act: [], audit: [] };
  });

  refreshEntries();
  loadPoints().catch((error) => $("points").append(element("p", { className: "message error", text: error.message })));
  loadSets();
  followEvents();
  setInterval(refreshEntries, 1000);
  $("requests-refused").addEventListener("change", refreshRequests);
  refreshRequests();
  setInterval(refreshRequests, 1000);
  loadJournalSelection();
  followJournal();

  // For the page's other scripts (time.js, explorations.js), which run after this one.
  window.chaosConsole = Object.freeze({ api, element, say, timeOfDay, refreshEntries });
})();
