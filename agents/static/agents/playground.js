// The admin playground: sends a turn to the stream view and shows its NDJSON lines
// (agents/protocols/playground/encoder.py) as they arrive. With "compare with" set, the
// same turn goes to both versions at once and their answers stream side by side, each
// version in its own conversation. Plain DOM, no dependencies; every text from the server
// goes in through textContent, never as HTML.
"use strict";

(function () {
  const settings = JSON.parse(document.getElementById("playground-settings").textContent);
  const csrf = document.getElementById("playground-csrf").value;
  const log = document.getElementById("playground-log");
  const versionSelect = document.getElementById("playground-version");
  const compareSelect = document.getElementById("playground-compare");
  const chatForm = document.getElementById("playground-chat");
  const taskForm = document.getElementById("playground-task");
  const said = document.getElementById("playground-said"); // read out by screen readers
  const draftPanel = document.getElementById("playground-draft");
  const draftBox = document.getElementById("playground-draft-config");
  const draftErrors = document.getElementById("playground-draft-errors");
  const draftButton = document.getElementById("playground-try-draft");
  let threadId = newThreadId();
  let compareThreadId = newThreadId(); // the compared version's own conversation
  let busy = false;
  // The turns streaming now (two when comparing): each one's run (from the answer's
  // X-Run-Id) and its fetch's abort.
  const streams = new Set();

  // ------------------------------------------------------------------ small helpers

  function el(tag, attrs, ...children) {
    const node = document.createElement(tag);
    for (const [key, value] of Object.entries(attrs || {})) {
      if (key === "class") node.className = value;
      else if (key === "text") node.textContent = value;
      else node.setAttribute(key, value);
    }
    for (const child of children) if (child) node.append(child);
    return node;
  }

  function newThreadId() {
    // crypto.randomUUID needs a secure context; an admin served over plain http is not one.
    const bytes = crypto.getRandomValues(new Uint8Array(12));
    return "playground-" + Array.from(bytes, (b) => b.toString(16).padStart(2, "0")).join("");
  }

  function pretty(text) {
    try {
      return JSON.stringify(JSON.parse(text), null, 2);
    } catch (_) {
      return text;
    }
  }

  // Dollars with the digits a model call's cost needs (a cheap turn costs fractions of
  // a cent): six decimals, trailing zeros dropped.
  function formatUsd(value) {
    const text = Number(value).toFixed(6).replace(/\.?0+$/, "");
    return text === "0" && value > 0 ? "<0.000001" : text;
  }

  function announce(text) {
    said.textContent = text;
  }

  // The clipboard API needs a secure context and the page's focus; elsewhere (an admin on
  // plain http) the text is copied through a selected, off-screen textarea.
  async function copyText(text) {
    if (navigator.clipboard && window.isSecureContext) {
      try {
        await navigator.clipboard.writeText(text);
        return true;
      } catch (_) {
        // refused (no permission, no focus): the fallback below
      }
    }
    const area = el("textarea", { class: "pg-copy-buffer", readonly: "", "aria-hidden": "true" });
    area.value = text;
    document.body.append(area);
    area.select();
    let copied = false;
    try {
      copied = document.execCommand("copy");
    } catch (_) {
      copied = false;
    }
    area.remove();
    return copied;
  }

  function tokensText(u) {
    u = u || {};
    return `${u.input_tokens || 0} in / ${u.output_tokens || 0} out / ${u.total_tokens || 0} tokens`;
  }

  function scrollDown() {
    log.scrollTop = log.scrollHeight;
  }

  function setBusy() {
    busy = streams.size > 0;
    for (const id of ["playground-send", "playground-run"]) {
      const button = document.getElementById(id);
      if (button) button.disabled = busy;
    }
    stopButton.hidden = !busy;
  }

  function chosenLabel(select) {
    const label = select.options[select.selectedIndex].textContent;
    return select === versionSelect && drafting() ? `draft (unsaved, from ${label})` : label;
  }

  // Stop asks the run to end canceled wherever it runs (the server process that answers
  // this POST may not be the one streaming the turn); the stream then ends with the
  // canceled line. If the cancel cannot be asked, the page stops reading instead.
  const stopButton = document.getElementById("playground-stop");
  async function stop(stream) {
    try {
      if (!stream.runId) throw new Error("no run yet");
      const response = await fetch(settings.cancelUrl.replace(settings.noRun, stream.runId), {
        method: "POST",
        credentials: "same-origin",
        headers: { "X-CSRFToken": csrf },
      });
      if (response.status !== 202) throw new Error(`the server answered ${response.status}`);
    } catch (_) {
      stream.abort.abort();
    }
  }

  stopButton.addEventListener("click", async () => {
    if (!streams.size) return;
    stopButton.disabled = true;
    try {
      await Promise.all([...streams].map(stop));
    } finally {
      stopButton.disabled = false;
    }
  });

  // ------------------------------------------------------------------ one turn

  // One answer: under its question in the log, or (comparing) in one of a turn's columns,
  // headed by its version. `version` is what it asks for (the picker's value when sent).
  class Turn {
    constructor(question, options) {
      const { column, version, label, draft } = options || {};
      this.version = version || versionSelect.value;
      this.draft = draft; // the config to run in place of the version's, or undefined
      this.answer = el("div", { class: "pg-answer pg-pending", "aria-busy": "true" });
      if (label) this.answer.append(el("div", { class: "pg-version", text: label }));
      this.text = el("div", { class: "pg-text" });
      this.answer.append(this.text);
      if (column) {
        column.append(this.answer);
      } else {
        const node = el("div", { class: "pg-turn" });
        if (question) {
          this.question = el("div", { class: "pg-user", text: question });
          node.append(this.question);
        }
        node.append(this.answer);
        log.append(node);
      }
      this.tools = new Map();
      this.ended = false;
      scrollDown();
    }

    handle(line) {
      const handler = this["on_" + line.type];
      if (handler) handler.call(this, line);
      scrollDown();
    }

    on_created(line) {
      this.runId = line.runId;
      this.answer.dataset.runId = line.runId;
      this.answeredBy = line.answeredBy;
      if (line.draft) this.markDraft();
    }

    // An unsaved config answered ("Try without saving"): said on the answer, as its run
    // record says it (the run's draft_config).
    markDraft() {
      this.answer.classList.add("pg-draft");
      if (this.answer.querySelector(".pg-version")) return; // a compared column's label says so
      this.answer.prepend(el("div", { class: "pg-draft-badge", text: "Draft (unsaved config)" }));
    }

    // The end of a turn: no longer busy, and what it said read out once.
    settle(text) {
      this.answer.classList.remove("pg-pending");
      this.answer.setAttribute("aria-busy", "false");
      if (text) announce(text);
    }

    on_delta(line) {
      this.text.textContent += line.text;
    }

    on_tool_call(line) {
      const result = el("pre", { class: "pg-tool-result", text: "running…" });
      const details = el(
        "details",
        { class: "pg-tool", "data-tool": line.name },
        el("summary", {}, el("span", { class: "pg-tool-name", text: line.name }),
          el("code", { class: "pg-tool-args", text: line.arguments })),
        el("div", { class: "pg-label", text: "Arguments" }),
        el("pre", { class: "pg-tool-arguments", text: pretty(line.arguments) }),
        el("div", { class: "pg-label", text: "Result" }),
        result,
      );
      // Tool calls come before the text that uses their results.
      this.answer.insertBefore(details, this.text);
      this.tools.set(line.callId, { details, result });
    }

    on_tool_result(line) {
      const tool = this.tools.get(line.callId);
      if (!tool) return;
      tool.result.textContent = pretty(line.content);
      tool.details.classList.add(line.isError ? "pg-tool-failed" : "pg-tool-done");
    }

    on_completed(line) {
      this.ended = true;
      if (line.guardrail) {
        this.answer.classList.add("pg-blocked");
        this.answer.insertBefore(this.blockNotice(line.guardrail), this.text);
      }
      this.text.textContent = line.answer;
      this.settle(line.guardrail ? `Blocked by ${line.guardrail.name}.` : `Answer: ${line.answer}`);
      if (line.structured && !line.guardrail) {
        this.answer.append(
          el("div", { class: "pg-label", text: "Object" }),
          el("pre", { class: "pg-structured", text: JSON.stringify(line.structured, null, 2) }),
        );
      }
      if (line.sources && line.sources.length) this.showSources(line.sources);
      this.footer(line);
      this.answer.append(this.evals(line));
    }

    // Which guardrail blocked, and what it found: the kind in words, how sure, which
    // detector decided, and the text it matched (docs/api.md#guardrails). An input block's
    // match is marked in the question too.
    blockNotice(g) {
      const notice = el("div", { class: "pg-guardrail", role: "note", "aria-label": "Guardrail notice" },
        el("div", { class: "pg-guardrail-head", text: `Blocked by ${g.name} at the ${g.stage} stage (${g.action}).` }));
      const found = g.detected;
      if (!found) return notice;
      const facts = [];
      if (found.kind) facts.push(el("strong", { class: "pg-guardrail-kind", text: settings.kindWords[found.kind] || found.kind }));
      facts.push(el("span", { class: "pg-guardrail-score", text: `score ${Number(found.score).toFixed(2)}` }));
      if (found.detector) facts.push(el("span", { class: "pg-guardrail-detector", text: `detector: ${found.detector}` }));
      const line = el("div", { class: "pg-guardrail-found" }, "Detected: ");
      facts.forEach((fact, index) => line.append(...(index ? [" · ", fact] : [fact])));
      notice.append(line);
      const span = found.span;
      if (span) {
        notice.append(el("blockquote", { class: "pg-guardrail-match", title: `characters ${span.start}–${span.end}` },
          el("mark", { text: span.text })));
        this.markQuestion(span, g.stage);
      }
      return notice;
    }

    markQuestion(span, stage) {
      const question = this.question;
      if (stage !== "input" || !question) return;
      const text = question.textContent;
      if (text.slice(span.start, span.end) !== span.text) return; // another message matched
      question.replaceChildren(text.slice(0, span.start),
        el("mark", { class: "pg-guardrail-mark", text: span.text }), text.slice(span.end));
    }

    // Under a completed answer: thumbs with an optional comment and, where the user may
    // edit a dataset of this agent's type here, "Add to dataset" with the answer as the
    // expected output, editable (agents/evals/from_runs.py).
    evals(line) {
      const url = (template) => template.replace(settings.noRun, this.runId);
      const comment = el("input", {
        type: "text",
        class: "pg-feedback-comment",
        maxlength: "4000",
        placeholder: "Comment (optional)",
      });
      const thumbButton = (kind, title, text) =>
        el("button", { type: "button", class: `pg-thumb pg-thumb-${kind}`, title, "aria-label": title, text });
      const up = thumbButton("up", "Good answer", "👍");
      const down = thumbButton("down", "Bad answer", "👎");
      const said = el("span", { class: "pg-said pg-feedback-said" });
      const thumb = async (score, chosen) => {
        const answer = await postJson(url(settings.feedbackUrl), { score, comment: comment.value.trim() });
        said.classList.toggle("pg-said-error", !answer.ok);
        if (!answer.ok) {
          said.textContent = errorText(answer.body, answer.status);
          return;
        }
        for (const button of [up, down]) button.classList.toggle("pg-thumb-chosen", button === chosen);
        said.textContent = "Feedback saved.";
      };
      up.addEventListener("click", () => thumb(1, up));
      down.addEventListener("click", () => thumb(-1, down));
      const box = el("div", { class: "pg-evals" },
        el("div", { class: "pg-feedback" }, this.copyButton(), up, down, comment, said));
      if (settings.datasets.length) box.append(this.addToDataset(line, url(settings.caseUrl)));
      return box;
    }

    // Copy: the answer's text as shown (a partial one too), with a visible confirmation.
    copyButton() {
      const button = el("button", { type: "button", class: "pg-copy", "aria-label": "Copy the answer", text: "Copy" });
      const done = el("span", { class: "pg-said pg-copy-said", role: "status" });
      button.addEventListener("click", async () => {
        const copied = await copyText(this.text.textContent);
        done.classList.toggle("pg-said-error", !copied);
        done.textContent = copied ? "Copied" : "Could not copy: select the text and press Ctrl+C.";
      });
      return el("span", { class: "pg-copy-box" }, button, done);
    }

    addToDataset(line, caseUrl) {
      const select = el("select", { class: "pg-case-dataset", "aria-label": "Dataset" });
      for (const d of settings.datasets) select.append(el("option", { value: d.id, text: d.name }));
      const expected = el("textarea", { class: "pg-case-expected", rows: "3", "aria-label": "Expected output" });
      expected.value =
        line.structured && !line.guardrail ? JSON.stringify(line.structured, null, 2) : line.answer || "";
      const add = el("button", { type: "button", class: "button pg-case-add", text: "Add" });
      const said = el("div", { class: "pg-said pg-case-said" });
      add.addEventListener("click", async () => {
        add.disabled = true;
        const answer = await postJson(caseUrl, { datasetId: select.value, expectedOutput: expected.value });
        add.disabled = false;
        said.classList.toggle("pg-said-error", !answer.ok);
        if (!answer.ok) {
          said.textContent = errorText(answer.body, answer.status);
          return;
        }
        said.replaceChildren(answer.body.said + " ", el("a", { href: answer.body.datasetUrl, text: "Open" }));
      });
      return el("details", { class: "pg-add-case" },
        el("summary", { text: "Add to dataset" }),
        el("div", { class: "pg-label", text: "Dataset" }), select,
        el("div", { class: "pg-label", text: "Expected output" }), expected,
        el("div", {}, add), said);
    }

    // The turn waits for a person: each gated call gets Approve / Reject (with a message
    // the model reads on a rejection); once every one is decided, the decisions go to the
    // server and the rest of the same run streams into this answer.
    on_approval_requested(line) {
      this.ended = true;
      this.settle("The turn waits for your approval.");
      if (line.text) this.text.textContent = line.text;
      const decisions = new Map();
      const requests = line.approvalRequests || [];
      for (const request of requests) {
        const tool = this.tools.get(request.callId);
        if (tool) tool.result.textContent = "waits for approval";
        const message = el("textarea", {
          class: "pg-approval-message",
          rows: "2",
          placeholder: "Message (told to the model if you reject)",
        });
        const approve = el("button", { type: "button", class: "pg-approve", text: "Approve" });
        const reject = el("button", { type: "button", class: "pg-reject", text: "Reject" });
        const box = el(
          "div",
          { class: "pg-approval", "data-request": request.approvalRequestId },
          el("div", { class: "pg-label", text: `Approve ${request.name}?` }),
          el("pre", { class: "pg-approval-arguments", text: pretty(request.arguments) }),
          message,
          el("div", { class: "pg-approval-buttons" }, approve, reject),
        );
        const choose = (decision) => {
          decisions.set(request.approvalRequestId, {
            approvalRequestId: request.approvalRequestId,
            decision,
            message: message.value.trim(),
          });
          box.classList.add(decision === "approve" ? "pg-approved" : "pg-rejected");
          approve.disabled = reject.disabled = message.disabled = true;
          if (decisions.size === requests.length) this.decide([...decisions.values()]);
        };
        approve.addEventListener("click", () => choose("approve"));
        reject.addEventListener("click", () => choose("reject"));
        this.answer.insertBefore(box, this.text);
      }
      this.footer(line);
    }

    decide(decisions) {
      this.ended = false;
      this.answer.classList.add("pg-pending");
      this.answer.setAttribute("aria-busy", "true");
      this.text.textContent = "";
      const url = settings.approvalsUrl.replace(settings.noRun, this.runId);
      send({ decisions }, this, url);
    }

    on_failed(line) {
      this.ended = true;
      if (line.code === "canceled") this.stopped();
      else this.fail(`${line.code}: ${line.message}`);
      this.footer(line);
    }

    // Stopped by Stop: what had streamed stays, said to be partial, and can be copied.
    stopped() {
      this.settle("Stopped.");
      this.answer.classList.add("pg-stopped");
      const partial = this.text.textContent ? "Stopped: the answer above is partial." : "Stopped before an answer.";
      this.answer.append(el("div", { class: "pg-stopped-text", text: partial }));
      this.answer.append(el("div", { class: "pg-evals" }, this.copyButton()));
    }

    showSources(sources) {
      const list = el("ol", { class: "pg-sources" });
      for (const s of sources) {
        list.append(
          el("li", {},
            el("details", {},
              el("summary", {},
                el("span", { class: "pg-source-title", text: s.title || s.docId }),
                el("span", { class: "pg-score", text: ` score ${Number(s.score).toFixed(3)}` })),
              el("pre", { class: "pg-source-text", text: s.text }))),
        );
      }
      this.answer.append(el("div", { class: "pg-label", text: "Sources" }), list);
    }

    footer(line) {
      const bits = [this.answeredBy];
      if (line.usage) bits.push(tokensText(line.usage));
      if (line.latencyMs != null) bits.push(`${line.latencyMs} ms`);
      const meta = el("div", { class: "pg-meta", text: bits.filter(Boolean).join(" · ") + " · " });
      this.meta = meta;
      // The run's cost is known once the run is recorded, after its last line: showCost.
      this.cost = el("span", { class: "pg-cost", text: "cost …" });
      meta.append(this.cost, " · ");
      const url = settings.runUrl.replace(settings.noRun, this.runId);
      meta.append(el("a", { href: url, class: "pg-run-link", text: "run" }));
      this.answer.append(meta);
    }

    // The recorded run's cost (its model calls at their catalog prices), once the stream
    // has closed: the server writes the run before it closes the stream.
    async showCost() {
      const cost = this.cost;
      if (!cost || !this.runId) return;
      this.cost = null; // an answer shows its cost once
      try {
        const response = await fetch(settings.runRecordUrl.replace(settings.noRun, this.runId), {
          credentials: "same-origin",
        });
        if (!response.ok) throw new Error(`the server answered ${response.status}`);
        const run = await response.json();
        // A past turn's footer (opened from a run) had no stream to give its tokens.
        if (!this.meta.textContent.includes(" tokens")) cost.before(`${tokensText(run.tokensUsage)} · `);
        cost.textContent = run.costUsd === null ? "cost unknown (unpriced model)" : `$${formatUsd(run.costUsd)}`;
        cost.dataset.costUsd = run.costUsd === null ? "" : String(run.costUsd);
      } catch (_) {
        cost.textContent = "cost not read";
      }
      cost.classList.add("pg-cost-done");
    }

    fail(message, detail) {
      this.ended = true;
      this.settle(message);
      this.answer.classList.add("pg-error");
      this.answer.append(el("div", { class: "pg-error-text errornote", text: message }));
      if (detail) markFields(detail);
    }
  }

  // ------------------------------------------------------------------ the request

  function errorText(body, status) {
    const detail = body && body.detail;
    if (Array.isArray(detail)) {
      return detail.map((d) => `${(d.loc || []).join(".")}: ${d.msg}`).join("\n");
    }
    return detail ? String(detail) : `The server answered ${status}.`;
  }

  // The same question to both versions: one turn with two columns, an answer in each.
  function compareTurns(question) {
    const node = el("div", { class: "pg-turn pg-compare-turn" });
    if (question) node.append(el("div", { class: "pg-user", text: question }));
    const columns = el("div", { class: "pg-compare" });
    node.append(columns);
    log.append(node);
    const sides = [
      [versionSelect, "a"],
      [compareSelect, "b"],
    ];
    return sides.map(([select, side]) => {
      const column = el("div", { class: "pg-column", "data-side": side });
      columns.append(column);
      const draft = side === "a" ? draftConfig() : undefined;
      return new Turn(null, { column, version: select.value, label: chosenLabel(select), draft });
    });
  }

  // A small JSON POST (feedback, a case): whether it went, its status and its body.
  async function postJson(url, payload) {
    try {
      const response = await fetch(url, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
        body: JSON.stringify(payload),
      });
      let body = null;
      try {
        body = await response.json();
      } catch (_) {
        // not JSON: the status says enough
      }
      return { ok: response.ok, status: response.status, body };
    } catch (error) {
      return { ok: false, status: 0, body: { detail: `The request failed: ${error.message}` } };
    }
  }

  // A turn, or (with `url`, the approvals view) the decisions that resume a waiting one.
  async function send(payload, turn, url) {
    const stream = { runId: null, abort: new AbortController() };
    streams.add(stream);
    setBusy();
    try {
      const body = url ? payload : { version: turn.version, ...payload };
      if (!url && turn.draft !== undefined) body.draft = turn.draft;
      const response = await fetch(url || settings.streamUrl, {
        method: "POST",
        credentials: "same-origin",
        headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
        body: JSON.stringify(body),
        signal: stream.abort.signal,
      });
      stream.runId = response.headers.get("X-Run-Id");
      if (!response.ok) {
        let body = null;
        try {
          body = await response.json();
        } catch (_) {
          // not JSON: the status says enough
        }
        turn.fail(errorText(body, response.status), body && body.detail);
        return;
      }
      if (turn.draft !== undefined) showDraftErrors([]);
      await readLines(response.body, (line) => turn.handle(line));
      if (!turn.ended) turn.fail("The stream ended before the answer did.");
      else await turn.showCost();
    } catch (error) {
      const stopped = error.name === "AbortError";
      turn.fail(stopped ? "Stopped." : `The request failed: ${error.message}`);
    } finally {
      streams.delete(stream);
      setBusy();
    }
  }

  // Comparing starts both versions on a new conversation, so each answers the same thread.
  function newConversation(note) {
    threadId = newThreadId();
    compareThreadId = newThreadId();
    log.replaceChildren(el("p", { class: "pg-note", text: note }));
  }

  // ------------------------------------------------------------------ try without saving

  // While the draft panel is open, each turn runs its config in place of the chosen
  // version's; the server validates it as a save would and saves no version.
  function drafting() {
    return Boolean(draftPanel) && !draftPanel.hidden;
  }

  // The draft's config (parsed), or undefined when not drafting; a draft that is not JSON
  // is sent as its text, for the server to refuse at body.draft.
  function draftConfig() {
    if (!drafting()) return undefined;
    try {
      return JSON.parse(draftBox.value);
    } catch (_) {
      return draftBox.value;
    }
  }

  function showDraftErrors(items) {
    if (!draftErrors) return;
    draftErrors.replaceChildren(...items.map((d) => el("li", { text: `${(d.loc || []).join(".")}: ${d.msg}` })));
    draftBox.setAttribute("aria-invalid", items.length ? "true" : "false");
  }

  function openDraft(config) {
    draftBox.value = typeof config === "string" ? config : JSON.stringify(config, null, 2);
    draftPanel.hidden = false;
    draftButton.setAttribute("aria-expanded", "true");
    draftButton.textContent = "Stop trying the draft";
    draftBox.setSelectionRange(0, 0); // its start in view: the model and the prompt
    draftBox.scrollTop = 0;
    showDraftErrors([]);
    newConversation(`New conversation: a draft (unsaved, from ${versionSelect.options[versionSelect.selectedIndex].textContent}) answers.`);
    draftBox.focus();
  }

  function closeDraft() {
    draftPanel.hidden = true;
    draftButton.setAttribute("aria-expanded", "false");
    draftButton.textContent = "Try without saving";
    newConversation("New conversation: the chosen version answers.");
  }

  // The config editor hands its unsaved config over in localStorage under this key and
  // opens the playground with ?draft=editor (docs/api.md#playground).
  const handedKey = `agentbuilder.playground-draft.${settings.agentId}`;

  if (draftButton) {
    draftButton.addEventListener("click", () => (drafting() ? closeDraft() : openDraft(settings.draftStart)));
    document.getElementById("playground-draft-reset").addEventListener("click", () => {
      draftBox.value = JSON.stringify(settings.draftStart, null, 2);
      showDraftErrors([]);
    });
  }

  compareSelect.addEventListener("change", () => {
    if (!compareSelect.value) return newConversation("New conversation.");
    const pair = `${chosenLabel(versionSelect)} and ${chosenLabel(compareSelect)}`;
    newConversation(`New conversation: ${pair} answer each message side by side.`);
  });

  async function readLines(stream, onLine) {
    const reader = stream.getReader();
    const decoder = new TextDecoder();
    let buffer = "";
    for (;;) {
      const { value, done } = await reader.read();
      buffer += decoder.decode(value || new Uint8Array(), { stream: !done });
      let end;
      while ((end = buffer.indexOf("\n")) >= 0) {
        const text = buffer.slice(0, end).trim();
        buffer = buffer.slice(end + 1);
        if (text) onLine(JSON.parse(text));
      }
      if (done) return;
    }
  }

  // ------------------------------------------------------------------ chat agents

  if (chatForm) {
    const box = document.getElementById("playground-message");
    chatForm.addEventListener("submit", (event) => {
      event.preventDefault();
      const message = box.value.trim();
      if (!message || busy) return;
      box.value = "";
      if (compareSelect.value) {
        const [a, b] = compareTurns(message);
        send({ message, threadId }, a);
        send({ message, threadId: compareThreadId }, b);
      } else {
        send({ message, threadId }, new Turn(message, { draft: draftConfig() }));
      }
      box.focus(); // the next message can be typed while this one streams
    });
    box.addEventListener("keydown", (event) => {
      if (event.key === "Enter" && !event.shiftKey && !event.isComposing) {
        event.preventDefault();
        chatForm.requestSubmit();
      }
    });
    document.getElementById("playground-new").addEventListener("click", () => {
      newConversation("New conversation.");
      box.focus();
    });
    box.focus();
  }

  // ------------------------------------------------------------------ task agents

  const fields = document.getElementById("playground-fields");

  function currentSchema() {
    const versions = settings.versions;
    const alias = settings.aliases.find((a) => a.name === versionSelect.value);
    const chosen = alias ? String(alias.number) : versionSelect.value;
    const version =
      chosen === "latest" ? versions[0] : versions.find((v) => String(v.number) === chosen);
    return (version && version.inputSchema) || { type: "object", properties: {} };
  }

  function inputFor(name, prop, required) {
    const id = "pg-input-" + name;
    const type = Array.isArray(prop.type) ? prop.type.find((t) => t !== "null") : prop.type;
    let input;
    if (Array.isArray(prop.enum)) {
      input = el("select", { id });
      if (!required) input.append(el("option", { value: "", text: "—" }));
      for (const option of prop.enum) {
        input.append(el("option", { value: JSON.stringify(option), text: String(option) }));
      }
      if (prop.default !== undefined) input.value = JSON.stringify(prop.default);
      input.dataset.kind = "enum";
    } else if (type === "boolean") {
      input = el("input", { id, type: "checkbox" });
      input.checked = prop.default === true;
      input.dataset.kind = "boolean";
    } else if (type === "integer" || type === "number") {
      input = el("input", { id, type: "number", step: type === "integer" ? "1" : "any" });
      if (prop.minimum !== undefined) input.min = prop.minimum;
      if (prop.maximum !== undefined) input.max = prop.maximum;
      if (prop.default !== undefined) input.value = prop.default;
      input.dataset.kind = type;
    } else if (type === "object" || type === "array") {
      input = el("textarea", { id, rows: "3", placeholder: type === "array" ? "[ … ]" : "{ … }" });
      if (prop.default !== undefined) input.value = JSON.stringify(prop.default, null, 2);
      input.dataset.kind = "json";
    } else {
      const long = (prop.maxLength || 0) > 200 || /text|content|body/i.test(name);
      input = el(long ? "textarea" : "input", long ? { id, rows: "3" } : { id, type: "text" });
      if (prop.default !== undefined) input.value = prop.default;
      input.dataset.kind = "string";
    }
    input.dataset.name = name;
    input.classList.add("pg-field-input");
    const label = el("label", { for: id, class: required ? "required" : "", text: name });
    const row = el("div", { class: "form-row pg-field", "data-field": name },
      el("div", { class: "flex-container" }, label, input));
    if (prop.description) row.append(el("div", { class: "help", text: prop.description }));
    row.append(el("ul", { class: "errorlist pg-field-errors" }));
    return row;
  }

  function renderTaskForm() {
    const schema = currentSchema();
    const required = new Set(schema.required || []);
    fields.replaceChildren();
    const props = Object.entries(schema.properties || {});
    if (!props.length) fields.append(el("p", { class: "help", text: "This version takes no inputs." }));
    for (const [name, prop] of props) fields.append(inputFor(name, prop || {}, required.has(name)));
  }

  function readInputs() {
    const inputs = {};
    const problems = [];
    for (const input of fields.querySelectorAll(".pg-field-input")) {
      const name = input.dataset.name;
      const kind = input.dataset.kind;
      if (kind === "boolean") {
        inputs[name] = input.checked;
        continue;
      }
      const raw = input.value;
      if (raw === "") continue; // left out: the schema's default or its `required` decides
      if (kind === "integer" || kind === "number") inputs[name] = Number(raw);
      else if (kind === "enum") inputs[name] = JSON.parse(raw);
      else if (kind === "json") {
        try {
          inputs[name] = JSON.parse(raw);
        } catch (error) {
          problems.push({ loc: ["body", "inputs", name], msg: "not valid JSON" });
        }
      } else inputs[name] = raw;
    }
    return { inputs, problems };
  }

  function markFields(detail) {
    if (!Array.isArray(detail)) return;
    showDraftErrors(detail.filter((d) => (d.loc || [])[1] === "draft"));
    if (!fields) return;
    for (const item of detail) {
      const loc = item.loc || [];
      if (loc[0] !== "body" || loc[1] !== "inputs") continue;
      const row = fields.querySelector(`[data-field="${CSS.escape(String(loc[2] ?? ""))}"]`);
      const target = row || fields;
      const list = target.querySelector(".pg-field-errors") || target;
      list.append(el("li", { text: item.msg }));
      if (row) row.classList.add("errors");
    }
  }

  function clearFieldErrors() {
    for (const list of fields.querySelectorAll(".pg-field-errors")) list.replaceChildren();
    for (const row of fields.querySelectorAll(".pg-field.errors")) row.classList.remove("errors");
  }

  if (taskForm) {
    renderTaskForm();
    versionSelect.addEventListener("change", renderTaskForm);
    taskForm.addEventListener("submit", (event) => {
      event.preventDefault();
      if (busy) return;
      clearFieldErrors();
      const { inputs, problems } = readInputs();
      const question = JSON.stringify(inputs);
      const turns = compareSelect.value
        ? compareTurns(question)
        : [new Turn(question, { draft: draftConfig() })];
      if (problems.length) {
        const text = problems.map((p) => `${p.loc.join(".")}: ${p.msg}`).join("\n");
        turns[0].fail(text, problems);
        for (const other of turns.slice(1)) other.fail(text);
        return;
      }
      for (const turn of turns) send({ inputs }, turn);
      const first = fields.querySelector(".pg-field-input");
      if (first) first.focus();
    });
  }

  // ------------------------------------------------------------------ opened from a run

  // ?run=<id> or ?thread=<id>: the conversation so far, then the next message goes on in
  // the same thread (the user's own; another caller's run is shown and not continued).
  function showOpened(opened) {
    const note = opened.continues
      ? `Continuing thread ${opened.threadId}: your next message goes on in it.`
      : "This run is not a thread of yours: your next message starts a new conversation.";
    log.replaceChildren(el("p", { class: "pg-note pg-opened-note", text: note }));
    for (const past of opened.turns) {
      const turn = new Turn(past.question);
      turn.runId = past.runId;
      turn.answer.dataset.runId = past.runId;
      turn.answeredBy = `v${past.version}${past.draft ? " (draft)" : ""}`;
      if (past.draft) turn.markDraft();
      turn.text.textContent = past.answer;
      turn.ended = true;
      turn.settle();
      turn.answer.classList.add("pg-past", `pg-past-${past.status}`);
      if (past.status === "canceled") turn.answer.append(el("div", { class: "pg-stopped-text", text: "Stopped: the answer above is partial." }));
      if (past.error && past.status !== "canceled") turn.answer.append(el("div", { class: "pg-error-text errornote", text: past.error }));
      turn.footer({ usage: null, latencyMs: null, status: past.status });
      turn.showCost();
    }
    if (opened.continues) threadId = opened.threadId;
    const last = opened.turns[opened.turns.length - 1];
    const option = last && [...versionSelect.options].find((o) => o.value === String(last.version));
    if (option && opened.continues) versionSelect.value = option.value;
  }

  if (settings.opened) showOpened(settings.opened);

  if (draftButton && new URLSearchParams(location.search).get("draft") === "editor") {
    let handed = null;
    try {
      handed = JSON.parse(localStorage.getItem(handedKey) || "null");
    } catch (_) {
      handed = null;
    }
    if (handed) openDraft(handed);
  }
})();
