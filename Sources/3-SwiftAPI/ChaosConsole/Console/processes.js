// Every control endpoint on the machine, from GET /v1/processes of the process that served
// this page, with a link to each web console. Text from processes is set as text only.
"use strict";
(function () {
  const token = new URLSearchParams(location.search).get("token") || "";
  const $ = (id) => document.getElementById(id);

  function cell(text, className) {
    const node = document.createElement("td");
    node.textContent = text;
    if (className) node.className = className;
    return node;
  }

  function chaos(status) {
    if (!status) return "—";
    const on = status.enabledEntries > 0 ? "ON (" + chaosEntriesSummary(status) + ")" : "no chaos";
    return on + (status.waiting ? ", waiting for go" : "");
  }

  function offers(process) {
    if (!process.status) return "not answering: " + (process.problem || "?");
    const features = process.status.features.length ? process.status.features : ["status", "entries", "time"];
    return features.join(", ");
  }

  function link(process) {
    const node = document.createElement("td");
    if (process.console) {
      const anchor = document.createElement("a");
      anchor.href = process.console;
      anchor.rel = "noopener noreferrer";
      anchor.textContent = process.isCurrent ? "this console" : "open console";
      anchor.setAttribute("aria-label", "Open the console of " + process.program + " (pid " + process.pid + ")");
      node.append(anchor);
    } else {
      node.textContent = "no web console: chaos ctl status " + process.pid;
    }
    return node;
  }

  async function refresh() {
    let listing;
    try {
      const response = await fetch("/v1/processes", { headers: { Authorization: "Bearer " + token } });
      listing = await response.json();
      if (!response.ok) throw new Error((listing.error && listing.error.message) || "HTTP " + response.status);
    } catch (error) {
      $("processes-state").textContent = "Not connected: " + error.message;
      return;
    }
    $("directory").textContent = "Endpoint files in " + listing.directory;
    const rows = listing.processes.map((process) => {
      const row = document.createElement("tr");
      row.dataset.pid = process.pid;
      row.append(cell(String(process.pid), "number"), cell(process.program), cell(process.kind === "swift" ? "in-process" : "chaos run " + (process.runner ? process.runner + " " : "") + "(" + process.kind + ")"),
                 cell(chaos(process.status)), cell(offers(process)), link(process));
      return row;
    });
    $("processes").querySelector("tbody").replaceChildren(...rows);
    $("processes").hidden = rows.length === 0;
    $("processes-state").textContent = rows.length === 0 ? "No process has a control endpoint." : rows.length + (rows.length === 1 ? " process" : " processes");
  }

  refresh();
  setInterval(refresh, 2000);
})();
