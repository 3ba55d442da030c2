// Virtual time in the console: shown while the process runs on it (GET /v1/time), with
// buttons that move it forward (POST /v1/time/advance?by=…, as `chaos ctl advance` does).
// Nothing shows while the process is on real time. Uses console.js's helpers.
"use strict";
(function () {
  const { api } = window.chaosConsole;
  const $ = (id) => document.getElementById(id);
  let busy = false;

  // "2030-01-01T01:00:00.000Z" → "2030-01-01 01:00:00 UTC": the endpoint's instant, in UTC.
  function instant(text) {
    return text.replace("T", " ").replace(/\.\d+Z$|Z$/, "") + " UTC";
  }

  // How far virtual time is from the real clock: "+4y 3d 02:05:10" style, days and a clock.
  function offset(nanoseconds) {
    const sign = nanoseconds < 0 ? "−" : "+";
    let seconds = Math.floor(Math.abs(nanoseconds) / 1e9);
    const days = Math.floor(seconds / 86400);
    seconds -= days * 86400;
    const two = (number) => String(number).padStart(2, "0");
    const clock = two(Math.floor(seconds / 3600)) + ":" + two(Math.floor(seconds / 60) % 60) + ":" + two(seconds % 60);
    return sign + (days ? days + "d " : "") + clock;
  }

  function show(time) {
    const section = $("time");
    section.hidden = !time.running;
    if (!time.running) return;
    $("time-now").textContent = instant(time.now);
    const parts = [];
    if (typeof time.offsetNanoseconds === "number") parts.push(offset(time.offsetNanoseconds) + " from the real clock");
    if (typeof time.pending === "number") parts.push(time.pending + (time.pending === 1 ? " wait" : " waits") + " pending");
    if (time.advance) parts.push("advancing: " + time.advance.steps + " steps so far");
    $("time-detail").textContent = parts.join(" · ");
    $("time-stop").hidden = !time.advance;
  }

  async function refresh() {
    try { show(await api("GET", "/v1/time")); } catch (_) { /* the banner says when the process is gone */ }
  }

  async function advance(by) {
    if (busy) return;
    busy = true;
    const message = $("time-message");
    message.textContent = "Advancing by " + by + "…";
    message.className = "message";
    try {
      const time = await api("POST", "/v1/time/advance?by=" + encodeURIComponent(by));
      show(time);
      message.textContent = "Advanced by " + by + " in " + time.steps + (time.steps === 1 ? " step" : " steps") + ".";
      message.className = "message ok";
    } catch (error) {
      message.textContent = error.message;
      message.className = "message error";
      refresh();
    } finally {
      busy = false;
    }
  }

  for (const button of document.querySelectorAll("#time button[data-by]")) {
    button.addEventListener("click", () => advance(button.dataset.by));
  }
  // Each sleep or timer due on the way is one step; a server's once-a-second timer makes a
  // day 86,400 of them. Stopping leaves virtual time where the advance got to.
  $("time-stop").addEventListener("click", async () => {
    try { show(await api("DELETE", "/v1/time/advance")); } catch (error) { $("time-message").textContent = error.message; }
  });
  $("time-custom").addEventListener("submit", (event) => {
    event.preventDefault();
    const by = $("time-by").value.trim();
    if (by) advance(by);
  });
  refresh();
  setInterval(refresh, 1000);
})();
