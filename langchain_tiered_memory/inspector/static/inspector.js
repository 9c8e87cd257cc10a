// The inspector's few actions, in plain JavaScript: forget (with a typed confirmation) and
// re-run failed jobs. Results are written with textContent: stored text is never markup.
"use strict";

function showResult(ok, lines) {
  const box = document.getElementById("result");
  box.hidden = false;
  box.className = "result " + (ok ? "ok" : "failed");
  box.replaceChildren(...lines.map((line) => {
    const p = document.createElement("p");
    p.textContent = line;
    return p;
  }));
  box.scrollIntoView({ block: "nearest" });
}

async function post(url, body) {
  const response = await fetch(url, {
    method: "POST",
    headers: { "Content-Type": "application/json" },
    body: JSON.stringify(body),
    credentials: "same-origin",
  });
  let data = {};
  try { data = await response.json(); } catch (e) { data = { error: response.statusText }; }
  return { ok: response.ok, status: response.status, data };
}

function describe(counts) {
  const parts = Object.entries(counts).filter(([, n]) => n).map(([k, n]) => `${n} ${k.replaceAll("_", " ")}`);
  return parts.length ? parts.join(", ") : "nothing";
}

function byteCheck(scrub) {
  const lines = [];
  if (scrub.wal_scrubbed === true) lines.push("Byte check: memory.db-wal truncated — no frame of the forgotten rows is left in a file.");
  else if (scrub.wal_scrubbed === false) lines.push("Byte check: a reader holds memory.db-wal; its frames of the forgotten rows go when it ends (the upkeep retries).");
  else lines.push("Byte check: the database server keeps its own log (nothing to scrub here).");
  if (scrub.job_answers_scrubbed) lines.push(`Scrubbed the forgotten text from ${scrub.job_answers_scrubbed} job rows.`);
  return lines;
}

function askToForget(button) {
  const dialog = document.getElementById("confirm");
  const input = document.getElementById("confirm-input");
  const go = document.getElementById("confirm-go");
  const kind = button.dataset.kind, target = button.dataset.target, user = button.dataset.user;
  document.getElementById("confirm-what").textContent = `Forget ${button.dataset.label}?`;
  document.getElementById("confirm-id").textContent = target;
  input.value = "";
  go.disabled = true;
  input.oninput = () => { go.disabled = input.value !== target; };
  dialog.onclose = async () => {
    if (dialog.returnValue !== "go" || input.value !== target) return;
    const { ok, data } = await post("/api/forget", { kind, user_id: user, target, confirm: input.value });
    if (!ok) { showResult(false, [data.error || "the forget failed"]); return; }
    showResult(true, [`Forgot ${kind} ${target}: ${describe(data.forgotten)}.`, ...byteCheck(data.scrub)]);
    document.querySelectorAll("[data-row]").forEach((row) => { if (row.dataset.row === target) row.remove(); });
    if (kind === "user") setTimeout(() => { window.location.href = "/users"; }, 1500);
  };
  dialog.returnValue = "";
  dialog.showModal();
  input.focus();
}

async function retryJobs(button) {
  button.disabled = true;
  button.textContent = "Running the failed jobs again…";
  const { ok, data } = await post("/api/jobs/retry", {});
  if (!ok) { showResult(false, [data.error || "the retry failed"]); button.disabled = false; return; }
  showResult(data.failed === 0, [`Ran ${data.retried} job(s) again: ${data.failed} failed, ${data.pending} pending now.`]);
  button.textContent = "Done: reload to see the journal";
}

document.addEventListener("click", (event) => {
  const button = event.target.closest("button");
  if (!button) return;
  if (button.classList.contains("forget")) { event.preventDefault(); askToForget(button); }
  if (button.id === "retry-jobs") { event.preventDefault(); retryJobs(button); }
});

// The replay's user: choosing one loads their threads (the form, without the old thread).
document.addEventListener("change", (event) => {
  if (event.target.id !== "replay-user") return;
  const form = event.target.form;
  form.elements.thread.disabled = true;
  form.submit();
});
