// What a status says of its entries, on every page: "0 of 1 entries active, 1 waiting for its
// point". An entry that waits for its point, or whose point did not fit it, is switched on
// but acts on nothing, so it is not counted as active. These are the words of
// ControlAPI.Status.entriesSummary, which chaos ctl list and status print.
"use strict";
function chaosEntriesSummary(status) {
  const pending = status.pendingEntries || 0;
  const unfit = status.notAppliedEntries || 0;
  let text = Math.max(0, status.enabledEntries - pending - unfit) + " of " + status.entries + " entries active";
  if (pending > 0) text += ", " + pending + " waiting for " + (pending === 1 ? "its point" : "their points");
  if (unfit > 0) text += ", " + unfit + " not applied (the point did not fit)";
  return text;
}
