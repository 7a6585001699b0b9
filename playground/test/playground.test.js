// The playground in a real browser: Debian's chromium, headless, driven by puppeteer-core. The
// page is built (build.mjs) and served on loopback (serve.mjs); the test types a broken policy and
// checks the marker's line and UTF-16 column, fixes it, formats it, runs its test blocks, decides
// an envelope (route and delay), follows the link the page keeps in its URL, saves the state and
// opens it again, starts from a bundled example, and saves a screenshot at
// build/artifacts/playground.png.
// CHROMIUM names the browser when it is not `chromium` on PATH.
import assert from "node:assert/strict";
import { accessSync, constants, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { delimiter, dirname, join, resolve } from "node:path";
import { after, before, test } from "node:test";
import { fileURLToPath } from "node:url";

import puppeteer from "puppeteer-core";

import { build } from "../build.mjs";
import { serve } from "../serve.mjs";

const root = resolve(dirname(fileURLToPath(import.meta.url)), "../..");
const screenshot = join(root, "build/artifacts/playground.png");
// Each wait for the page (the whole run has its own timeout, scripts/browser.sh). Generous: on a
// loaded 2-core runner the first load, which compiles the 2 MB module, has taken 15 s.
const WAIT = { timeout: 30_000 };
const READY = { timeout: 90_000 };

// The browser: $CHROMIUM, else the first of these on PATH.
function chromium() {
  const candidates = process.env.CHROMIUM
    ? [process.env.CHROMIUM]
    : ["chromium", "chromium-browser"].flatMap((name) => (process.env.PATH || "").split(delimiter).map((dir) => join(dir, name)));
  for (const path of candidates) {
    try {
      accessSync(path, constants.X_OK);
      return path;
    } catch {}
  }
  throw new Error(
    process.env.CHROMIUM
      ? `CHROMIUM=${process.env.CHROMIUM} is not an executable file`
      : "chromium is not installed: scripts/deps.sh installs Debian's chromium (or set CHROMIUM to a Chromium or Chrome binary)",
  );
}

let server, url, browser, page;
const problems = []; // the page's uncaught errors and console errors

before(async () => {
  const site = build(join(root, "build/playground-test"));
  ({ server, url } = await serve(site));
  browser = await puppeteer.launch({
    executablePath: chromium(),
    headless: true,
    // A container has no user namespaces for the sandbox, and a small /dev/shm.
    args: ["--no-sandbox", "--disable-dev-shm-usage", "--disable-gpu", "--no-first-run", "--font-render-hinting=none"],
    timeout: 60_000,
    protocolTimeout: 60_000,
  });
  page = await open(url);
});

after(async () => {
  await browser?.close();
  server?.close();
});

async function open(address) {
  const p = await browser.newPage();
  await p.setViewport({ width: 1440, height: 900 });
  p.on("pageerror", (error) => problems.push(`page error: ${error.message}`));
  p.on("console", (message) => message.type() === "error" && problems.push(`console: ${message.text()}`));
  p.setDefaultTimeout(WAIT.timeout);
  await p.goto(address, { waitUntil: "load", ...READY });
  await p.waitForFunction(() => document.body.dataset.ready, READY);
  assert.equal(await p.evaluate(() => document.body.dataset.ready), "true", problems.join("\n"));
  return p;
}

// Replaces a textarea's text as a person would: select all, delete, then paste `pasted` (one
// input event) and type `typed` key by key.
async function typeInto(selector, typed, pasted = "") {
  await page.click(selector);
  await page.evaluate((s) => document.querySelector(s).select(), selector);
  await page.keyboard.press("Backspace");
  if (pasted) await page.keyboard.sendCharacter(pasted);
  await page.keyboard.type(typed);
}

const text = (selector) => page.$eval(selector, (e) => e.textContent.trim());
const value = (p, selector) => p.$eval(selector, (e) => e.value);

// The line with the error holds an emoji (2 UTF-16 units, 1 character) before it, so the UTF-16
// column and the character column differ by one.
const broken = `version 1
policy "orders.create" {
  backoff constant base 250ms jitter none
  rule odd when field == "😀 amount" and bogus -> stop "odd"
  rule throttled when code == RATE_LIMITED -> retry
  default   ->   stop
  test "a throttle retries" {
    envelope {"code": "RATE_LIMITED"}
    context {"sideEffect": "none"}
    expect retry delay 250ms rule throttled
  }
  test "a refusal stops" {
    envelope {"code": "PERMISSION"}
    expect stop rule default
  }
}
`;

// The policy as Format leaves it once the mistake is gone: the canonical layout (`recourse fmt`).
const formatted = `version 1
policy "orders.create" {
  backoff constant base 250ms jitter none
  rule odd       when field == "😀 amount" -> stop "odd"
  rule throttled when code == RATE_LIMITED -> retry
  default -> stop
  test "a throttle retries" {
    envelope {"code": "RATE_LIMITED"}
    context {"sideEffect": "none"}
    expect retry rule throttled delay 250ms
  }
  test "a refusal stops" { envelope {"code": "PERMISSION"}  expect stop rule default }
}
`;

test("a broken policy is marked at its line and UTF-16 column", async () => {
  // The first three lines pasted, the rest typed.
  const at = broken.indexOf("  rule odd");
  await typeInto("#policy", broken.slice(at), broken.slice(0, at));
  const line = broken.split("\n")[3];
  await page.waitForSelector('mark.diag.error[data-code="E010"]', WAIT);
  const marks = await page.$$eval("mark.diag", (ms) => ms.map((m) => ({ ...m.dataset, text: m.textContent })));
  assert.deepEqual(marks, [{ line: "4", column: String(line.indexOf("bogus") + 1), code: "E010", text: "bogus" }]);
  assert.equal(line.indexOf("bogus") + 1, [...line.slice(0, line.indexOf("bogus"))].length + 2, "UTF-16 and character columns differ");
  assert.match(await page.$eval('.gutter [data-line="4"]', (e) => e.className), /\berror\b/);
  assert.match(await text("#diagnostics li.error"), new RegExp(`^4:${line.indexOf("bogus") + 1} error\\[E010\\]: unknown attribute 'bogus'`));
  assert.equal(await text("#compile-state"), "1 error");
  assert.match(await text("#decision"), /does not compile/);
});

test("fixing it compiles, formats and runs the test blocks", async () => {
  // Delete " and bogus" as a person would: select it, then Backspace.
  await page.evaluate(() => {
    const t = document.querySelector("#policy");
    const at = t.value.indexOf(" and bogus");
    t.focus();
    t.setSelectionRange(at, at + " and bogus".length);
  });
  await page.keyboard.press("Backspace");
  await page.waitForFunction(() => document.querySelector("#compile-state").textContent.startsWith("compiles"), WAIT);
  assert.equal(await page.$$eval("mark.diag", (ms) => ms.length), 0);
  await page.click("#format");
  await page.waitForFunction(() => !document.querySelector("#policy").value.includes("default   ->"), WAIT);
  assert.equal(await value(page, "#policy"), formatted);
  await page.click("#tests-tab");
  await page.waitForFunction(() => document.querySelector("#tests-summary")?.textContent === "2 passed, 0 failed", WAIT);
  const tests = await page.$$eval(".test-list li", (ls) => ls.map((l) => l.querySelector("b").textContent + " " + l.dataset.line));
  assert.deepEqual(tests, ["PASS 7", "PASS 12"]);
  assert.match(await page.$eval('.gutter [data-line="7"]', (e) => e.className), /test-pass/);
  // "Try it" puts the second test's input in the editors, and it decides as the test expects.
  await page.click('.test-list li[data-index="1"] button[data-try]');
  await page.waitForFunction(() => document.querySelector("#route")?.textContent === "stop", WAIT);
  assert.deepEqual(JSON.parse(await value(page, "#envelope")), { code: "PERMISSION" });
  assert.equal(JSON.parse(await value(page, "#context")).tool, "orders.create");
  assert.equal(await text("#decision-rule"), "default");
  assert.match(await text("#tables"), /policy "orders\.create"/);
});

test("an envelope and a context decide: route, delay and the rule that matched", async () => {
  await typeInto("#context", '{"tool": "orders.create", "sideEffect": "none", "attempt": 1}');
  await typeInto("#envelope", '{"code": "RATE_LIMITED", "retryAfterMs": 1200}');
  await page.waitForFunction(() => document.querySelector("#decision-delay")?.textContent === "1200 ms", WAIT);
  assert.equal(await text("#route"), "retry");
  assert.equal(await text("#decision-rule"), "throttled");
  await page.click('[data-tab="explanation"]');
  assert.deepEqual(await page.$$eval("#explanation .rules > li", (ls) => ls.map((l) => [l.dataset.rule, l.className])),
    [["odd", ""], ["throttled", "matched"]]);
  // No Retry-After: the constant backoff's 250 ms.
  await typeInto("#envelope", '{"code": "RATE_LIMITED"}');
  await page.waitForFunction(() => document.querySelector("#decision-delay")?.textContent === "250 ms", WAIT);
  await typeInto("#context", '{"tool": "orders.create", "attempt": "one"}');
  await page.waitForSelector("#decide-error", WAIT);
  assert.match(await text("#decide-error"), /context cannot be read/);
  await typeInto("#context", '{"tool": "orders.create", "sideEffect": "none", "attempt": 1}');
  await page.waitForSelector("#route", WAIT);
});

test("the link carries the policy, the envelope and the context", async () => {
  await page.waitForFunction(() => location.hash.startsWith("#z="), WAIT);
  await new Promise((r) => setTimeout(r, 300)); // the last edit's fragment
  const linked = await open(page.url());
  for (const s of ["#policy", "#envelope", "#context"]) assert.equal(await value(linked, s), await value(page, s), s);
  await linked.waitForSelector("#route", WAIT);
  assert.equal(await linked.$eval("#route", (e) => e.textContent), "retry");
  await linked.close();
});

test("a saved file carries them too: Download, then Open", async () => {
  const dir = mkdtempSync(join(tmpdir(), "recourse-playground-"));
  try {
    const cdp = await browser.target().createCDPSession();
    await cdp.send("Browser.setDownloadBehavior", { behavior: "allow", downloadPath: dir });
    await page.click("#download");
    const file = join(dir, "orders.create.playground.json");
    for (let waited = 0; !existsSync(file); waited += 100) {
      assert.ok(waited < WAIT.timeout, "the download did not arrive");
      await new Promise((r) => setTimeout(r, 100));
    }
    const saved = JSON.parse(readFileSync(file, "utf8"));
    assert.deepEqual(saved, {
      "recourse-playground": 1,
      policy: await value(page, "#policy"),
      envelope: await value(page, "#envelope"),
      context: await value(page, "#context"),
    });
    const opened = await open(url);
    await (await opened.$("#open")).uploadFile(file);
    await opened.waitForFunction((t) => document.querySelector("#policy").value === t, WAIT, saved.policy);
    assert.equal(await value(opened, "#envelope"), saved.envelope);
    assert.equal(await value(opened, "#context"), saved.context);
    await opened.close();
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
});

test("a bundled example starts with its tests passing and its first test's input decided", async () => {
  const path = "rules/examples/search.query.recourse";
  const source = readFileSync(join(root, path), "utf8");
  await page.select("#examples", path);
  await page.waitForFunction((t) => document.querySelector("#policy").value === t, WAIT, source);
  const count = source.match(/^\s*test "/gm).length;
  await page.waitForFunction((n) => document.querySelector("#tests-summary")?.textContent === `${n} passed, 0 failed`, WAIT, count);
  assert.equal(JSON.parse(await value(page, "#envelope")).retryAfterMs, 15000);
  assert.equal(await text("#route"), "degrade");
  assert.equal(await text("#decision-rule"), "long_wait");
  await page.click('[data-tab="explanation"]');
  mkdirSync(dirname(screenshot), { recursive: true });
  await page.screenshot({ path: screenshot });
  assert.deepEqual(problems, []);
});
