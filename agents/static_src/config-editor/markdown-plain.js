// Schema descriptions shown as plain text. The package renders them as markdown with
// markdown-it and shiki, which would be half of the bundle for text that is plain anyway.
const ESCAPES = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;", "'": "&#39;" };

export function renderMarkdown(text) {
  return String(text).replace(/[&<>"']/g, (c) => ESCAPES[c]);
}
