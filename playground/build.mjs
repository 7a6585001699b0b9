// Assembles the playground's static site, by default into build/playground/: the page
// (index.html, app.js, editor.js, state.js, style.css, node-module.js), the npm package's ES
// modules (js/src/) and its WebAssembly build (js/wasm/recourse.cjs, made by scripts/wasm.sh),
// and examples.js with the bundled policies (every *.recourse file under rules/ and examples/).
// Any static file server can serve the folder. Usage: node playground/build.mjs [out-dir]
import { cpSync, existsSync, mkdirSync, readFileSync, readdirSync, rmSync, writeFileSync } from "node:fs";
import { dirname, join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";

const here = dirname(fileURLToPath(import.meta.url));
const root = resolve(here, "..");
const page = ["index.html", "app.js", "editor.js", "state.js", "style.css", "node-module.js"];
const groups = ["rules/examples", "rules/bench", "examples"]; // the order the menu lists them

/** The bundled policies: [{group, name, path, text}], grouped, sorted by path in a group. */
export function bundledExamples() {
  const seen = new Set();
  const out = [];
  for (const group of groups) {
    const files = readdirSync(join(root, group), { recursive: true })
      .filter((f) => f.endsWith(".recourse"))
      .map((f) => join(group, f))
      .filter((f) => !seen.has(f))
      .sort();
    for (const path of files) {
      seen.add(path);
      const name = relative(group, path).replace(/\.recourse$/, "");
      out.push({ group, name, path, text: readFileSync(join(root, path), "utf8") });
    }
  }
  return out;
}

/** Writes the site into `out` (emptied first); returns its path. Throws when the module is missing. */
export function build(out = join(root, "build/playground")) {
  const wasm = join(root, "js/wasm/recourse.cjs");
  if (!existsSync(wasm)) throw new Error(`${wasm} is missing: build it with scripts/wasm.sh`);
  rmSync(out, { recursive: true, force: true });
  mkdirSync(join(out, "recourse/wasm"), { recursive: true });
  for (const file of page) cpSync(join(here, file), join(out, file));
  cpSync(join(root, "js/src"), join(out, "recourse/src"), { recursive: true });
  cpSync(wasm, join(out, "recourse/wasm/recourse.cjs"));
  writeFileSync(join(out, "examples.js"),
    "// The bundled example policies, written by playground/build.mjs.\n" +
    `export const examples = ${JSON.stringify(bundledExamples(), null, 1)};\n`);
  return out;
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url))
  console.log(build(process.argv[2] ? resolve(process.argv[2]) : undefined));
