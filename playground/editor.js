// The policy editor: a plain textarea over a backdrop of the same text in which each diagnostic's
// position is marked, and a gutter of line numbers carrying the diagnostics' and the tests'
// markers. Positions are the engine's: 1-based lines and UTF-16 columns (a JavaScript string
// index + 1), so a mark lands on the character the compiler meant whatever the line holds.

const escapes = { "&": "&amp;", "<": "&lt;", ">": "&gt;", '"': "&quot;" };
const escape = (text) => text.replace(/[&<>"]/g, (c) => escapes[c]);
const rank = { error: 0, warning: 1, note: 2 };

/** The lines of a text as the engine counts them: "\r\n", "\n" and "\r" each end one. */
export function splitLines(text) {
  return text.split(/\r\n|\n|\r/);
}

/** The string index of a 1-based line and UTF-16 column in `text` (clamped to the line). */
export function indexOf(text, line, utf16Column) {
  const lines = splitLines(text);
  let index = 0;
  const breaks = text.match(/\r\n|\n|\r/g) || [];
  for (let i = 0; i < Math.min(line, lines.length) - 1; ++i) index += lines[i].length + breaks[i].length;
  const here = lines[Math.min(line, lines.length) - 1] ?? "";
  return index + Math.min(Math.max(utf16Column - 1, 0), here.length);
}

// How many UTF-16 units the mark at `at` in `line` covers: the word there, one character
// otherwise, none at the end of the line (the mark is then a space after it).
function markLength(line, at) {
  const word = /^[\p{L}\p{N}_.*-]+/u.exec(line.slice(at));
  if (word) return word[0].length;
  const code = line.codePointAt(at);
  return code === undefined ? 0 : code > 0xffff ? 2 : 1;
}

/** A textarea with marked diagnostics and a gutter. `onInput` runs after each edit. */
export class PolicyEditor {
  constructor(root, onInput) {
    this.textarea = root.querySelector("textarea");
    this.backdrop = root.querySelector(".backdrop");
    this.gutter = root.querySelector(".gutter");
    this.diagnostics = [];
    this.tests = [];
    this.textarea.addEventListener("input", () => {
      this.render();
      onInput();
    });
    this.textarea.addEventListener("scroll", () => this.#sync());
    this.textarea.addEventListener("keydown", (event) => this.#key(event));
    this.render();
  }

  get text() {
    return this.textarea.value;
  }

  /** Replaces the text (kept on the undo stack where the browser allows it). */
  set text(value) {
    const t = this.textarea;
    if (t.value === value) return;
    t.focus();
    t.select();
    if (!document.execCommand("insertText", false, value)) t.value = value;
    t.setSelectionRange(0, 0);
    t.scrollTop = 0;
    this.render();
  }

  /**
   * Marks `diagnostics` ([{severity, code, line, utf16Column, message}]) in the text and the
   * gutter, and `tests` ([{line, passed, name}]) in the gutter.
   */
  mark(diagnostics, tests = []) {
    this.diagnostics = diagnostics.filter((d) => d.line > 0);
    this.tests = tests;
    this.render();
  }

  /** Puts the caret at a 1-based line and UTF-16 column and scrolls it into view. */
  reveal(line, utf16Column) {
    const at = indexOf(this.text, line, utf16Column);
    this.textarea.focus();
    this.textarea.setSelectionRange(at, at);
    const lineHeight = parseFloat(getComputedStyle(this.textarea).lineHeight) || 18;
    this.textarea.scrollTop = Math.max(0, (line - 5) * lineHeight);
    this.#sync();
  }

  render() {
    const lines = splitLines(this.text);
    const byLine = new Map();
    for (const d of this.diagnostics) {
      if (!byLine.has(d.line)) byLine.set(d.line, []);
      byLine.get(d.line).push(d);
    }
    const testAt = new Map(this.tests.map((t) => [t.line, t]));
    const html = [];
    const gutter = [];
    lines.forEach((line, i) => {
      const n = i + 1;
      const found = (byLine.get(n) || []).sort((a, b) => a.utf16Column - b.utf16Column);
      html.push(this.#markLine(line, n, found));
      const worst = found.map((d) => d.severity).sort((a, b) => rank[a] - rank[b])[0];
      const test = testAt.get(n);
      const title = [...found.map((d) => `${d.severity}[${d.code}]: ${d.message}`),
        ...(test ? [`test "${test.name}": ${test.passed ? "passed" : "failed"}`] : [])].join("\n");
      const classes = ["line", worst, test && (test.passed ? "test-pass" : "test-fail")].filter(Boolean);
      gutter.push(`<div class="${classes.join(" ")}" data-line="${n}"${title ? ` title="${escape(title)}"` : ""}>${n}</div>`);
    });
    // A last empty line keeps the backdrop as tall as the textarea's scrollable text.
    this.backdrop.innerHTML = html.join("\n") + "\n ";
    this.gutter.innerHTML = gutter.join("");
    this.#sync();
  }

  // One line of the backdrop, its diagnostics' positions wrapped in <mark>.
  #markLine(line, n, found) {
    let out = "";
    let done = 0;
    for (const d of found) {
      const at = Math.min(Math.max(d.utf16Column - 1, 0), line.length);
      if (at < done) continue; // overlaps the mark before it
      const length = markLength(line, at);
      out += escape(line.slice(done, at));
      out += `<mark class="diag ${d.severity}" data-line="${n}" data-column="${d.utf16Column}" data-code="${escape(d.code)}">` +
        `${length ? escape(line.slice(at, at + length)) : " "}</mark>`;
      done = at + length;
    }
    return out + escape(line.slice(done));
  }

  #sync() {
    this.backdrop.scrollTop = this.textarea.scrollTop;
    this.backdrop.scrollLeft = this.textarea.scrollLeft;
    this.gutter.scrollTop = this.textarea.scrollTop;
  }

  // Tab indents by two spaces (the canonical layout's), Shift-Tab is left to the browser.
  #key(event) {
    if (event.key !== "Tab" || event.shiftKey || event.ctrlKey || event.altKey || event.metaKey) return;
    event.preventDefault();
    document.execCommand("insertText", false, "  ");
  }
}
