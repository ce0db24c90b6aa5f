// What the admin's config editor (agents/static/agents/config_editor.js) uses, as one
// global, `AgentEditor`: CodeMirror 6, its JSON language, and JSON Schema completion,
// hover and linting from codemirror-json-schema.
export { EditorView, basicSetup } from "codemirror";
export { EditorState } from "@codemirror/state";
export { hoverTooltip } from "@codemirror/view";
export { json, jsonParseLinter, jsonLanguage } from "@codemirror/lang-json";
export { linter, lintGutter, forceLinting } from "@codemirror/lint";
export {
  jsonCompletion,
  jsonSchemaHover,
  jsonSchemaLinter,
  stateExtensions,
  updateSchema,
} from "codemirror-json-schema";
export { syntaxHighlighting, syntaxTree } from "@codemirror/language";
// Tokens as stable classes (tok-string, tok-number …), coloured by config_editor.css in the
// admin's light or dark mode; CodeMirror's default highlighting has light colours only.
export { classHighlighter } from "@lezer/highlight";
