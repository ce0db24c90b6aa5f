// The server refuses a body over its limit before reading it, with a bare 413: say so here
// instead, before sending. Every other check (each file's size, type, encoding) is the form's.
document.addEventListener("DOMContentLoaded", () => {
  const form = document.getElementById("document-upload");
  const note = document.getElementById("upload-too-large");
  if (!form || !note) return;
  form.addEventListener("submit", (event) => {
    const files = Array.from(form.querySelector("input[type=file]").files);
    const total = files.reduce((sum, file) => sum + file.size, 0);
    note.hidden = total <= Number(form.dataset.filesLimit);
    if (!note.hidden) event.preventDefault();
  });
});
