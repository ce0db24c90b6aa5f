// A dataset's case table in the admin (agents/evals/table_views.py): edit a row in place,
// add one, remove the selected ones; each save is one new revision, which the page then
// shows. A refused save shows each problem in its cell and changes nothing. Plain DOM, no
// dependencies; every text from the server goes in through textContent.
"use strict";

(function () {
  const settings = JSON.parse(document.getElementById("dataset-cases-settings").textContent);
  const csrf = document.getElementById("dataset-csrf").value;
  const table = document.getElementById("case-table");
  const body = table.querySelector("tbody");
  const status = document.getElementById("case-status");
  const removeButton = document.getElementById("case-remove");
  const selectAll = document.getElementById("case-select-all");

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

  async function post(url, payload) {
    const response = await fetch(url, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify(payload),
    });
    let answer = null;
    try {
      answer = await response.json();
    } catch (_) {
      // not JSON: the status says enough
    }
    return { ok: response.ok, status: response.status, body: answer };
  }

  function say(text, failed) {
    status.textContent = text;
    status.classList.toggle("case-status-error", Boolean(failed));
  }

  // The page's revision and count follow each save; the revision select gains the new one.
  function showRevision(revision, count) {
    document.getElementById("dataset-revision").textContent = revision;
    const field = document.querySelector(".field-revision .readonly"); // the form's, above
    if (field) field.textContent = revision;
    document.getElementById("dataset-count").textContent = count;
    document.getElementById("dataset-cases").dataset.revision = revision;
    const select = document.getElementById("dataset-revision-select");
    if (select && !select.querySelector(`option[value="${revision}"]`)) {
      for (const option of select.options) option.textContent = option.value;
      const option = el("option", { value: String(revision), text: `${revision} (current)` });
      select.prepend(option);
      select.value = String(revision);
    }
    const none = document.getElementById("case-none");
    if (none) none.hidden = count > 0;
  }

  // ---------------------------------------------------------------- a row being edited

  function cells(row) {
    return row.querySelectorAll(".case-cell");
  }

  function edit(row) {
    if (row.classList.contains("case-editing")) return;
    row.classList.add("case-editing");
    for (const cell of cells(row)) {
      const text = cell.querySelector(".case-text").textContent;
      const lines = text.split("\n").length;
      const box = el("textarea", {
        class: "case-input",
        rows: String(Math.min(8, Math.max(2, lines))),
        "aria-label": table.querySelector(`th[data-field="${cell.dataset.field}"]`).textContent,
      });
      box.value = text;
      cell.querySelector(".case-text").hidden = true;
      cell.append(box, el("ul", { class: "errorlist case-errors" }));
    }
    const actions = row.querySelector(".case-actions");
    actions.querySelector(".case-edit").hidden = true;
    const save = el("button", { type: "button", class: "button default case-save", text: "Save" });
    const cancel = el("button", { type: "button", class: "button case-cancel", text: "Cancel" });
    save.addEventListener("click", () => saveRow(row, save));
    cancel.addEventListener("click", () => stopEditing(row));
    actions.append(save, cancel, el("ul", { class: "errorlist case-row-errors" }));
    row.querySelector(".case-input").focus();
  }

  function stopEditing(row) {
    if (!row.dataset.caseId) {
      row.remove(); // a new row never saved
      return;
    }
    row.classList.remove("case-editing");
    for (const cell of cells(row)) {
      cell.classList.remove("errors");
      cell.querySelector(".case-text").hidden = false;
      for (const node of cell.querySelectorAll(".case-input, .case-errors")) node.remove();
    }
    const actions = row.querySelector(".case-actions");
    for (const node of actions.querySelectorAll(".case-save, .case-cancel, .case-row-errors")) {
      node.remove();
    }
    actions.querySelector(".case-edit").hidden = false;
  }

  function clearErrors(row) {
    for (const list of row.querySelectorAll(".case-errors, .case-row-errors")) {
      list.replaceChildren();
    }
    for (const cell of cells(row)) cell.classList.remove("errors");
  }

  function showErrors(row, answer, statusCode) {
    const detail = answer && answer.detail;
    const items = Array.isArray(detail)
      ? detail
      : [{ loc: [], msg: detail ? String(detail) : `The server answered ${statusCode}.` }];
    for (const item of items) {
      const field = (item.loc || [])[0] === "row" ? item.loc[1] : undefined;
      const cell = field && row.querySelector(`.case-cell[data-field="${CSS.escape(field)}"]`);
      const list = cell
        ? cell.querySelector(".case-errors")
        : row.querySelector(".case-row-errors");
      list.append(el("li", { text: item.msg }));
      if (cell) cell.classList.add("errors");
    }
  }

  async function saveRow(row, button) {
    const fields = {};
    for (const cell of cells(row)) fields[cell.dataset.field] = cell.querySelector(".case-input").value;
    const caseId = row.dataset.caseId;
    const url = caseId ? settings.case.replace(settings.noCase, caseId) : settings.add;
    button.disabled = true;
    clearErrors(row);
    try {
      const answer = await post(url, { row: fields });
      if (!answer.ok) {
        showErrors(row, answer.body, answer.status);
        say("Not saved: see the row's errors.", true);
        return;
      }
      const saved = answer.body.case;
      row.dataset.caseId = saved.id;
      row.classList.remove("case-new");
      const pick = row.querySelector(".case-select");
      if (pick) pick.disabled = false;
      row.querySelector(".case-position").textContent = saved.position;
      for (const cell of cells(row)) {
        cell.querySelector(".case-text").textContent = saved.row[cell.dataset.field] || "";
      }
      stopEditing(row);
      showRevision(answer.body.revision, answer.body.count);
      say(`Saved: revision ${answer.body.revision}.`);
    } catch (error) {
      showErrors(row, { detail: `The request failed: ${error.message}` }, 0);
    } finally {
      button.disabled = false;
    }
  }

  // ---------------------------------------------------------------- add, select, remove

  function newRow() {
    const row = el("tr", { class: "case-row case-new", "data-case-id": "" });
    row.append(
      el("td", { class: "case-pick" }, el("input", { type: "checkbox", class: "case-select", disabled: "" })),
      el("td", { class: "case-position", text: "new" }),
    );
    for (const field of settings.fields) {
      row.append(el("td", { class: "case-cell", "data-field": field }, el("div", { class: "case-text" })));
    }
    row.append(
      el("td", { class: "case-run" }),
      el("td", { class: "case-actions" },
        el("button", { type: "button", class: "button case-edit", text: "Edit" })),
    );
    body.append(row);
    edit(row);
  }

  function selected() {
    return [...body.querySelectorAll(".case-select:checked")].map((box) => box.closest("tr"));
  }

  function updateRemove() {
    removeButton.disabled = selected().length === 0;
  }

  async function removeSelected() {
    const rows = selected().filter((row) => row.dataset.caseId);
    if (!rows.length) return;
    removeButton.disabled = true;
    const answer = await post(settings.remove, { ids: rows.map((row) => row.dataset.caseId) });
    if (!answer.ok) {
      const detail = answer.body && answer.body.detail;
      say(Array.isArray(detail) ? detail.map((d) => d.msg).join(" ") : String(detail || answer.status), true);
      updateRemove();
      return;
    }
    for (const row of rows) row.remove();
    if (selectAll) selectAll.checked = false;
    showRevision(answer.body.revision, answer.body.count);
    say(`Removed ${rows.length}: revision ${answer.body.revision}.`);
    updateRemove();
  }

  body.addEventListener("click", (event) => {
    const button = event.target.closest(".case-edit");
    if (button) edit(button.closest("tr"));
  });
  body.addEventListener("change", (event) => {
    if (event.target.classList.contains("case-select")) updateRemove();
  });
  if (selectAll) {
    selectAll.addEventListener("change", () => {
      for (const box of body.querySelectorAll(".case-select:not([disabled])")) box.checked = selectAll.checked;
      updateRemove();
    });
  }
  document.getElementById("case-add").addEventListener("click", newRow);
  removeButton.addEventListener("click", removeSelected);
})();
