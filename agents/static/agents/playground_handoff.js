// "Try without saving" on an agent's change page: the config as edited so far (the textarea
// the config editor writes to) is handed to the playground, opened in a new tab so the edit
// stays here; the playground runs it as a draft and saves no version (playground.js reads
// the same localStorage key when opened with ?draft=editor).
"use strict";

document.addEventListener("click", (event) => {
  const link = event.target.closest("a.playground-draft-link");
  const field = document.getElementById("id_config");
  if (!link || !field) return;
  let draft;
  try {
    draft = JSON.parse(field.value);
  } catch (_) {
    draft = field.value; // not JSON: the playground shows it, and the server says where
  }
  localStorage.setItem(`agentbuilder.playground-draft.${link.dataset.agent}`, JSON.stringify(draft));
});
