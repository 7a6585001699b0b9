// The recourse playground (docs/javascript.md, "The playground"): every edit compiles the policy
// with the engine's WebAssembly build, in the page, and shows its diagnostics at their line and
// UTF-16 column, runs its own test blocks, prints its decision tables, and decides and explains
// the envelope and context. The state travels in the URL's fragment (state.js) or a saved file.
import { RecourseError, abi, compile, format, version } from "recourse";

import { PolicyEditor } from "./editor.js";
import { examples } from "./examples.js";
import { download, fromFile, fromFragment, toFragment } from "./state.js";

const $ = (selector) => document.querySelector(selector);
const FILE = "policy.recourse"; // the editor's text, as diagnostics name it
const DEFAULT_ENVELOPE = { code: "RATE_LIMITED", retryable: true, retryAfterMs: 1500 };

const view = {
  examples: $("#examples"),
  envelope: $("#envelope"),
  context: $("#context"),
  compileState: $("#compile-state"),
  diagnostics: $("#diagnostics"),
  decision: $("#decision"),
  explanation: $("#explanation"),
  tests: $("#tests"),
  testsTab: $("#tests-tab"),
  tables: $("#tables"),
  decisionJson: $("#decision-json"),
  notice: $("#notice"),
};

let bundle = null; // the current policy's, or null while it does not compile
const editor = new PolicyEditor($("#editor"), () => schedule(refresh));
const escapes = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" };
const esc = (text) => String(text).replace(/[&<>"]/g, (c) => escapes[c]);

// Runs `fn` once the typing pauses (each keystroke compiles otherwise; a compile takes
// milliseconds, but a fast typist outruns them on a large policy).
let timer = 0;
function schedule(fn) {
  clearTimeout(timer);
  timer = setTimeout(fn, 120);
}

function notice(text) {
  view.notice.textContent = text;
  clearTimeout(notice.timer);
  notice.timer = setTimeout(() => (view.notice.textContent = ""), 4000);
}

/** Compiles the policy and brings every panel up to date; returns the test results. */
function refresh({ decides = true } = {}) {
  clearTimeout(timer);
  bundle?.free();
  const { bundle: compiled, diagnostics } = compile([{ path: FILE, text: editor.text }]);
  bundle = compiled;
  const tests = bundle ? bundle.runTests() : [];
  editor.mark(diagnostics, tests);
  showDiagnostics(diagnostics);
  showTests(tests);
  view.tables.textContent = bundle ? bundle.dump() : "The policy does not compile.";
  if (decides) {
    decide();
    saveLink();
  }
  return tests;
}

function showDiagnostics(diagnostics) {
  const errors = diagnostics.filter((d) => d.severity === "error").length;
  view.compileState.textContent = bundle
    ? `compiles${diagnostics.length ? `, ${diagnostics.length} finding${diagnostics.length === 1 ? "" : "s"}` : ""}`
    : `${errors} error${errors === 1 ? "" : "s"}`;
  view.compileState.className = bundle ? "ok" : "error";
  view.diagnostics.innerHTML = diagnostics
    .map((d, i) =>
      `<li class="${d.severity}" data-index="${i}" data-line="${d.line}" data-column="${d.utf16Column}">` +
      `<b>${d.line}:${d.utf16Column}</b> ${d.severity}[${esc(d.code)}]: ${esc(d.message)}` +
      (d.help ? `<div class="help">${esc(d.help)}</div>` : "") + "</li>")
    .join("");
  view.diagnostics.onclick = (event) => {
    const item = event.target.closest("li");
    if (item && +item.dataset.line) editor.reveal(+item.dataset.line, +item.dataset.column);
  };
}

function showTests(tests) {
  const failed = tests.filter((t) => !t.passed).length;
  view.testsTab.textContent = tests.length ? `Tests ${tests.length - failed}/${tests.length}` : "Tests";
  view.testsTab.className = failed ? "error" : tests.length ? "ok" : "";
  if (!bundle) {
    view.tests.innerHTML = `<p class="muted">The policy does not compile: no tests ran.</p>`;
    return;
  }
  view.tests.innerHTML =
    `<p id="tests-summary">${tests.length - failed} passed, ${failed} failed</p>` +
    (tests.length ? "" : `<p class="muted">The policy has no <code>test</code> blocks.</p>`) +
    `<ol class="test-list">` +
    tests.map((t, i) =>
      `<li class="${t.passed ? "pass" : "fail"}" data-index="${i}" data-line="${t.line}">` +
      `<b>${t.passed ? "PASS" : "FAIL"}</b> ${esc(t.policy)}: ${esc(t.name)} <span class="muted">line ${t.line}</span>` +
      `<div>expected <code>${esc(t.expected)}</code>${t.passed ? "" : `, got <code>${esc(t.actual)}</code>`}</div>` +
      t.mismatches.map((m) => `<div class="mismatch">${esc(m)}</div>`).join("") +
      `<button data-try="${i}" title="Put this test's envelope and context in the editors">Try it</button></li>`)
      .join("") + "</ol>";
  view.tests.onclick = (event) => {
    const button = event.target.closest("button[data-try]");
    if (!button) return;
    const t = tests[+button.dataset.try];
    view.envelope.value = JSON.stringify(t.envelope, null, 2);
    view.context.value = JSON.stringify(t.context, null, 2);
    decide();
    saveLink();
  };
}

/** Decides and explains the envelope and context with the current policy. */
function decide() {
  const envelope = view.envelope.value;
  const context = view.context.value.trim() || "{}";
  view.decisionJson.textContent = "";
  view.explanation.innerHTML = "";
  try {
    if (!bundle) throw new Error("The policy does not compile.");
    const decision = JSON.parse(bundle.decideJson(envelope, context));
    showDecision(decision);
    view.decisionJson.textContent = JSON.stringify(decision, null, 2);
    showExplanation(bundle.explain(envelope, context));
  } catch (error) {
    // decideJson() refuses only a context it cannot read (the envelope is untrusted: it decides
    // stop, with a warning); explain() also wants an object and a policy for the tool.
    if (view.decisionJson.textContent) {
      view.explanation.innerHTML = `<p class="muted">No explanation: ${esc(error.message)}</p>`;
    } else {
      const what = error instanceof RecourseError ? `The context cannot be read: ${error.message}` : error.message;
      view.decision.innerHTML = `<p class="error" id="decide-error">${esc(what)}</p>`;
      view.decision.dataset.route = "";
    }
  }
}

function ms(value) {
  return value === undefined || value === null ? "—" : `${value} ms`;
}

function showDecision(d) {
  view.decision.dataset.route = d.route;
  const facts = [
    ["delay", ms(d.delayMs), "delay"],
    ["rule", d.rule, "rule"],
    ["reason", d.reason],
    ["target", d.target],
    ["exhausted", d.exhausted],
    ["attempt", d.attempt],
    ["attempts left", d.attemptsLeft],
    ["repairs left", d.repairsLeft],
    ["server's Retry-After", d.retryAfterMs === undefined ? "" : ms(d.retryAfterMs)],
    ["idempotency key", d.idempotencyKey],
    ["policy", d.policy && `${d.policy} ${(d.policyHash ?? "").slice(0, 19)}…`],
  ].filter(([, value]) => value !== undefined && value !== null && value !== "");
  view.decision.innerHTML =
    `<div class="route route-${esc(d.route)}" id="route">${esc(d.route)}</div>` +
    `<dl>${facts.map(([k, v, id]) => `<dt>${esc(k)}</dt><dd${id ? ` id="decision-${id}"` : ""}>${esc(v)}</dd>`).join("")}</dl>` +
    (d.warnings?.length
      ? `<ul class="warnings">${d.warnings.map((w) => `<li>${esc(w.kind)}${w.field ? ` (${esc(w.field)})` : ""}: ${esc(w.message)}</li>`).join("")}</ul>`
      : "");
}

function showExplanation(x) {
  view.explanation.innerHTML =
    `<p>policy <b>${esc(x.policy)}</b>: the rules in the order they are tried, up to the one that matched.</p>` +
    `<ol class="rules">` +
    x.rules.map((r) =>
      `<li class="${r.matched ? "matched" : ""}" data-rule="${esc(r.rule)}">` +
      `<a href="#" data-line="${r.line}" data-column="${r.column}">${r.matched ? "✓" : "✗"} rule ${esc(r.rule)}</a>` +
      ` <span class="muted">line ${r.line}</span>` +
      (r.tests.length
        ? `<ul>${r.tests.map((t) => `<li class="${t.result}"><code>${esc(t.test)}</code> ${t.result ? "holds" : "fails"}: the value is <code>${esc(t.value)}</code></li>`).join("")}</ul>`
        : "") + "</li>").join("") +
    "</ol>" +
    (x.guard ? `<p class="guard">The guard <b>${esc(x.guard)}</b> overrides the rule's route.</p>` : "");
  view.explanation.onclick = (event) => {
    const link = event.target.closest("a[data-line]");
    if (!link) return;
    event.preventDefault();
    editor.reveal(+link.dataset.line, +link.dataset.column);
  };
}

function state() {
  return { policy: editor.text, envelope: view.envelope.value, context: view.context.value };
}

// The link always carries the current state (the fragment, replaced without a history entry).
let linkWrites = Promise.resolve();
function saveLink() {
  const current = state();
  linkWrites = linkWrites.then(async () => {
    history.replaceState(null, "", await toFragment(current));
  });
}

/** The name of the first policy a text defines (before it compiles, as typed), or undefined. */
function policyName(text) {
  return /^\s*policy\s+"([^"]+)"/m.exec(text)?.[1];
}

/**
 * Puts a state in the editors; without an envelope or a context (an example, a .recourse file)
 * they are the first test's, or a default.
 */
function load({ policy, envelope, context }) {
  editor.text = policy;
  const [first] = refresh({ decides: false });
  const tool = policyName(policy) ?? "";
  view.envelope.value = envelope ?? JSON.stringify(first?.envelope ?? DEFAULT_ENVELOPE, null, 2);
  view.context.value = context ?? JSON.stringify(first?.context ?? { tool, sideEffect: "none" }, null, 2);
  decide();
  saveLink();
}

function loadExample(path) {
  const example = examples.find((e) => e.path === path);
  if (!example) return;
  view.examples.value = path;
  load({ policy: example.text });
}

async function start() {
  $("#engine").textContent = `engine ${version}, C ABI ${abi.version}.${abi.minor}, WebAssembly`;
  let group = null;
  for (const e of examples) {
    if (group?.label !== e.group) {
      group = document.createElement("optgroup");
      group.label = e.group;
      view.examples.append(group);
    }
    group.append(new Option(e.name, e.path));
  }
  view.examples.onchange = () => view.examples.value && loadExample(view.examples.value);
  for (const input of [view.envelope, view.context])
    input.addEventListener("input", () => schedule(() => (decide(), saveLink())));
  $("#format").onclick = formatPolicy;
  $("#copy-link").onclick = copyLink;
  $("#download").onclick = () =>
    download(`${(policyName(editor.text) ?? "policy").replace(/[^\w.-]+/g, "_")}.playground.json`, state());
  $("#open").onchange = openFile;
  for (const tab of document.querySelectorAll("[role=tab]")) tab.onclick = () => selectTab(tab.dataset.tab);
  window.addEventListener("hashchange", () => fromLink().catch((e) => notice(e.message)));
  if (!(await fromLink().catch((e) => (notice(`The link is damaged: ${e.message}`), false))))
    loadExample(examples[0].path);
  document.body.dataset.ready = "true";
}

async function fromLink() {
  if (location.hash === (await toFragment(state()))) return true; // our own replaceState
  const linked = await fromFragment(location.hash);
  if (!linked) return false;
  view.examples.value = "";
  load(linked);
  return true;
}

function formatPolicy() {
  const out = format(editor.text, FILE);
  if (out.text === null) {
    editor.mark(out.diagnostics);
    showDiagnostics(out.diagnostics);
    notice("Not formatted: the policy does not parse.");
    return;
  }
  if (out.text === editor.text) return notice("Already in the canonical layout.");
  editor.text = out.text;
  refresh();
  notice("Formatted.");
}

async function copyLink() {
  saveLink();
  await linkWrites;
  try {
    await navigator.clipboard.writeText(location.href);
    notice("Link copied.");
  } catch {
    prompt("The link (copy it):", location.href);
  }
}

async function openFile(event) {
  const file = event.target.files[0];
  event.target.value = "";
  if (!file) return;
  try {
    view.examples.value = "";
    load(fromFile(file.name, await file.text()));
    notice(`Opened ${file.name}.`);
  } catch (error) {
    notice(`Cannot open ${file.name}: ${error.message}`);
  }
}

function selectTab(name) {
  for (const tab of document.querySelectorAll("[role=tab]")) tab.setAttribute("aria-selected", String(tab.dataset.tab === name));
  for (const panel of document.querySelectorAll("[data-panel]")) panel.hidden = panel.dataset.panel !== name;
}

start().catch((error) => {
  document.body.dataset.ready = "failed";
  notice(`The playground failed to start: ${error.message}`);
  throw error;
});
