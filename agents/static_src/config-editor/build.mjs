// Bundles entry.js into one minified script for the admin, licences kept at its end.
import fs from "node:fs";
import path from "node:path";
import { fileURLToPath } from "node:url";

import * as esbuild from "esbuild";

const here = path.dirname(fileURLToPath(import.meta.url));
const out = path.resolve(here, "../../static/agents/vendor/config-editor.js");

const plainMarkdown = {
  name: "plain-markdown",
  setup(build) {
    build.onResolve({ filter: /\/utils\/markdown$/ }, (args) =>
      args.importer.includes("codemirror-json-schema")
        ? { path: path.join(here, "markdown-plain.js") }
        : undefined,
    );
  },
};

const result = await esbuild.build({
  entryPoints: [path.join(here, "entry.js")],
  bundle: true,
  minify: true,
  format: "iife",
  globalName: "AgentEditor",
  target: "es2020",
  legalComments: "eof",
  plugins: [plainMarkdown],
  outfile: out,
  metafile: true,
  banner: { js: "/* The admin's config editor: CodeMirror 6 and codemirror-json-schema, bundled. Licences: config-editor.LICENSES.txt beside this file. */" },
});

// Every bundled package's licence, from its own LICENSE file, beside the bundle.
const packages = new Map();
for (const input of Object.keys(result.metafile.inputs)) {
  const match = input.match(/node_modules\/((?:@[^/]+\/)?[^/]+)\//);
  if (match) packages.set(match[1], path.join(here, "node_modules", match[1]));
}
const sections = [...packages.entries()].sort().map(([name, dir]) => {
  const meta = JSON.parse(fs.readFileSync(path.join(dir, "package.json"), "utf8"));
  const file = fs.readdirSync(dir).find((f) => /^(licen[cs]e|copying)/i.test(f));
  const text = file ? fs.readFileSync(path.join(dir, file), "utf8").trim() : `License: ${meta.license}`;
  return `${name}@${meta.version} (${meta.license})\n\n${text}`;
});
const licences = out.replace(/\.js$/, ".LICENSES.txt");
fs.writeFileSync(licences, sections.join("\n\n" + "-".repeat(72) + "\n\n") + "\n");
console.log(`wrote ${path.relative(process.cwd(), out)} and its licences (${packages.size} packages)`);
