// An experiment's page while it runs: polls its progress (the progress view answers as
// GET /v1/experiments/{id} does) about once a second and moves the bar; once the
// experiment has ended, reloads the page, which then shows the summary and every result.
// Plain DOM; the server's text goes in through textContent.
"use strict";

(function () {
  const settings = JSON.parse(document.getElementById("experiment-settings").textContent);
  if (settings.ended) return;
  const bar = document.getElementById("experiment-progress");
  const text = document.getElementById("experiment-progress-text");
  const status = document.getElementById("experiment-status");
  const POLL_MS = 1000;
  let failures = 0;

  function show(body) {
    bar.max = Math.max(body.progress.total, 1);
    bar.value = body.progress.done;
    text.textContent = `${body.progress.done} / ${body.progress.total}`;
    status.textContent = body.status;
    status.className = `experiment-status status-${body.status}`;
  }

  async function poll() {
    try {
      const response = await fetch(settings.progressUrl, {
        credentials: "same-origin",
        headers: { Accept: "application/json" },
      });
      if (!response.ok) throw new Error(`the server answered ${response.status}`);
      const body = await response.json();
      failures = 0;
      show(body);
      if (body.ended) {
        window.location.reload();
        return;
      }
    } catch (error) {
      // A restarting server or a dropped connection: keep trying, more slowly.
      failures += 1;
      text.title = `progress unknown: ${error.message}`;
    }
    setTimeout(poll, POLL_MS * Math.min(1 + failures, 10));
  }

  setTimeout(poll, POLL_MS);
})();
