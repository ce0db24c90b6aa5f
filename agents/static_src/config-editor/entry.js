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
export { syntaxTree } from "@codemirror/language";
