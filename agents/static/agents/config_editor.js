// The admin's config editor: turns the config textarea into CodeMirror (the bundle in
// vendor/config-editor.js, global AgentEditor) with the config's JSON Schema for completion
// and hover, and marks at their place the problems the server's own validation finds, as
// saving would report them. The textarea stays the form's field: the editor writes to it.
"use strict";

// The admin puts a widget's scripts in the page's head, before the form: start after it.
document.addEventListener("DOMContentLoaded", () => {
  const E = window.AgentEditor;
  const settingsNode = document.getElementById("config-editor-settings");
  if (!E || !settingsNode) return; // the plain textarea still works
  const settings = JSON.parse(settingsNode.textContent);
  const container = settingsNode.closest(".config-editor");
  const textarea = document.getElementById(container.dataset.for);
  const problems = container.querySelector(".config-editor-problems");
  const needsEnvironment = container.querySelector(".config-editor-needs");
  const typeSelect = document.getElementById("id_agent_type");
  const environmentSelect = document.getElementById("id_environment");
  const templateSelect = document.getElementById("config-editor-template");
  const csrf = (document.querySelector("[name=csrfmiddlewaretoken]") || {}).value || "";
  let applied = null; // the text of the template last put in, while it is left untouched
  let recheck = false; // what the text is checked against changed: the linter is told so

  function agentType() {
    return settings.agentType || (typeSelect && typeSelect.value) || "";
  }

  function environment() {
    return settings.environment || (environmentSelect && environmentSelect.value) || "";
  }

  // ---------------------------------------------------------------- where a path is

  function propertyName(state, node) {
    const text = state.sliceDoc(node.from, node.to);
    try {
      return JSON.parse(text);
    } catch (_) {
      return text;
    }
  }

  // The range to mark for an error at `loc` (a path into the config): the property's name
  // when its value is an object or a list, the value otherwise; where the path stops
  // (a missing property), the first character of the deepest part found. A key that should
  // not be there at all (`keyItself`, an unknown field) is its name: the typo is the name.
  function rangeOf(state, loc, keyItself) {
    let node = E.syntaxTree(state).topNode.firstChild;
    let mark = node;
    for (const key of loc) {
      let next = null;
      let name = null;
      if (node && node.name === "Object" && typeof key === "string") {
        for (let child = node.firstChild; child; child = child.nextSibling) {
          if (child.name !== "Property" || !child.firstChild) continue;
          if (propertyName(state, child.firstChild) === key) {
            name = child.firstChild;
            next = child.lastChild !== name ? child.lastChild : null;
            break;
          }
        }
      } else if (node && node.name === "Array" && typeof key === "number") {
        let index = 0;
        for (let child = node.firstChild; child; child = child.nextSibling) {
          if (child.name === "[" || child.name === "]" || child.name === ",") continue;
          if (index++ === key) {
            next = child;
            break;
          }
        }
      }
      if (!next) {
        const at = (name || node || { from: 0 }).from;
        return name ? { from: name.from, to: name.to } : { from: at, to: Math.min(at + 1, state.doc.length) };
      }
      const whole = keyItself || next.name === "Object" || next.name === "Array";
      mark = whole ? name || next : next;
      node = next;
    }
    return mark ? { from: mark.from, to: mark.to } : { from: 0, to: state.doc.length };
  }

  // ---------------------------------------------------------------- the server's check

  function showProblems(items) {
    problems.replaceChildren(
      ...items.map((item) => {
        const li = document.createElement("li");
        li.textContent = (item.loc.length ? item.loc.join(".") + ": " : "") + item.msg;
        return li;
      }),
    );
    problems.hidden = items.length === 0;
    container.dataset.checked = String(items.length);
  }

  async function serverCheck(view) {
    const text = view.state.doc.toString();
    let config;
    try {
      config = JSON.parse(text);
    } catch (_) {
      showProblems([]);
      return []; // the JSON linter says where the syntax breaks
    }
    if (!agentType()) return [];
    // Without an environment the server checks the shape only; the page says so.
    const response = await fetch(settings.checkUrl, {
      method: "POST",
      credentials: "same-origin",
      headers: { "Content-Type": "application/json", "X-CSRFToken": csrf },
      body: JSON.stringify({ environment: environment(), agentType: agentType(), config }),
    });
    if (!response.ok) return [];
    const { errors } = await response.json();
    if (view.state.doc.toString() !== text) return []; // typed on since: a newer check comes
    showProblems(errors);
    return errors.map((error) => ({
      ...rangeOf(view.state, error.loc, error.type === "extra_forbidden"),
      severity: "error",
      message: error.msg,
      source: error.loc.join("."),
    }));
  }

  // ---------------------------------------------------------------- the editor

  const view = new E.EditorView({
    doc: textarea.value,
    extensions: [
      E.basicSetup,
      E.json(),
      E.syntaxHighlighting(E.classHighlighter),
      E.linter(E.jsonParseLinter(), { delay: 300 }),
      E.linter(serverCheck, { delay: 600, needsRefresh: () => recheck }),
      E.lintGutter(),
      E.jsonLanguage.data.of({ autocomplete: E.jsonCompletion() }),
      E.hoverTooltip(E.jsonSchemaHover()),
      E.stateExtensions({}),
      E.EditorView.updateListener.of((update) => {
        if (update.docChanged) textarea.value = update.state.doc.toString();
      }),
      E.EditorView.contentAttributes.of({ "aria-label": "Config (JSON)" }),
      // A prompt is one JSON string, often long: wrapped, it reads without scrolling.
      E.EditorView.lineWrapping,
    ],
  });
  textarea.hidden = true;
  textarea.after(view.dom);
  container.dataset.ready = "true";

  function setText(text) {
    view.dispatch({ changes: { from: 0, to: view.state.doc.length, insert: text } });
  }

  // Said, not left to silence: completion and checks of the catalogs need an environment.
  function sayWhatIsMissing() {
    if (needsEnvironment) needsEnvironment.hidden = !environmentSelect || Boolean(environment());
  }

  async function loadSchema() {
    sayWhatIsMissing();
    if (!agentType()) return;
    const query = new URLSearchParams({ environment: environment(), agentType: agentType() });
    const response = await fetch(`${settings.schemaUrl}?${query}`, { credentials: "same-origin" });
    if (response.ok) E.updateSchema(view, await response.json());
    // forceLinting only hurries a check already due, as after typing; for the same text in
    // another environment or type, one is made due first (an empty update, seen by
    // needsRefresh).
    recheck = true;
    view.dispatch({});
    recheck = false;
    E.forceLinting(view);
  }

  // ---------------------------------------------------------------- templates (add page)

  function applyTemplate(key) {
    const template = settings.templates.find((t) => t.key === key);
    if (!template) return;
    if (typeSelect) typeSelect.value = template.agentType;
    applied = JSON.stringify(template.config, null, 2);
    setText(applied);
    loadSchema();
  }

  if (templateSelect) {
    templateSelect.addEventListener("change", () => applyTemplate(templateSelect.value));
    const untouched = !textarea.value.trim() || textarea.value.trim() === "null";
    if (untouched) applyTemplate(templateSelect.value);
  }
  if (typeSelect) {
    typeSelect.addEventListener("change", () => {
      // A template left as it was follows the type; a config someone edited stays.
      const pristine = applied !== null && view.state.doc.toString() === applied;
      const first = settings.templates.find((t) => t.agentType === typeSelect.value);
      if (pristine && first) {
        templateSelect.value = first.key;
        applyTemplate(first.key);
      } else loadSchema();
    });
  }
  if (environmentSelect) environmentSelect.addEventListener("change", loadSchema);
  loadSchema();
});
