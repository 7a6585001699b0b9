// recourse/mcp against the official MCP SDK (@modelcontextprotocol/sdk 1.32.2): a Client talking
// to the hostile server of mcp-server.js in process (the SDK's InMemoryTransport) and as a child
// process on stdio, each tool failing as a case of ../shared/cases does. Time is fake (a clock
// the sleeps advance), except the client's 50 ms request timeout of the lost write.
import assert from "node:assert/strict";
import { readFileSync, unlinkSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";
import { after, describe, test } from "node:test";

import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";
import { InMemoryTransport } from "@modelcontextprotocol/sdk/inMemory.js";

import { Health, compile } from "../src/index.js";
import { McpRecovery, idempotentFromAnnotations } from "../src/mcp.js";
import { INJECTED, makeServer, makeState } from "./mcp-server.js";
import { root } from "./support.js";

const policies = (keys) => `version 1
policy "*" {
  limits { attempts = 3  retry_after_max = 60s }
  backoff exponential base 10ms factor 2 max 1s jitter none
  rule throttled when code in [TRANSIENT, RATE_LIMITED] and retryable -> retry
  rule needs_approval when code == PERMISSION -> authorize
  rule lost when code == TIMEOUT -> retry
  default -> stop
}
policy "flaky.read" {
  tool { idempotent = true }
  limits { attempts = 3  retry_after_max = 60s }
  backoff exponential base 10ms factor 2 max 1s jitter none
  rule throttled when code in [TRANSIENT, RATE_LIMITED] and retryable -> retry
  default -> stop
}
policy "orders.create" {
  tool { idempotent = false  idempotency_keys = ${keys} }
  limits { attempts = 3 }
  backoff constant base 10ms jitter none
  rule lost when code == TIMEOUT -> retry
  default -> stop
}
policy "notes.edit" {
  tool { arguments = [old_text, new_text] }
  breaker { failures = 2  cooldown = 30s }
  rule anchor when code == NOT_FOUND and field in arguments -> repair
  default -> stop
}
policy "status.check" {
  tool { idempotent = true  fallback = "status.cached" }
  limits { attempts = 2 }
  breaker { failures = 2  cooldown = 30s }
  backoff constant base 10ms jitter none
  rule transient when code in [TRANSIENT, RATE_LIMITED, TIMEOUT] -> retry
  default -> stop
}`;
const bundle = compile(policies(false)).bundle;
const keyed = compile(policies(true)).bundle;

// A clock that only the sleeps move: every wait is recorded and takes no time.
function fakeTime() {
  const time = { now: 1_700_000_000_000, waits: [] };
  time.clock = () => time.now;
  time.sleep = async (ms) => {
    time.waits.push(ms);
    time.now += ms;
    return true;
  };
  return time;
}

// Two ways to reach the server. In process, each test has a server of its own, and connect()
// makes a new Client on a new connection to it. On stdio, one child process serves the suite (a
// new node process per test costs a second or more): each test resets its counts first, and
// connect() returns the one connection. `stats()` is what the server saw (calls and keys per tool).
const transports = {
  "in process": {
    async open() {
      const state = makeState();
      return {
        async connect() {
          const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
          await makeServer(state).connect(serverSide);
          const client = new Client({ name: "test", version: "1.0.0" });
          await client.connect(clientSide);
          return client;
        },
        stats: async () => state,
      };
    },
  },
  stdio: {
    client: undefined,
    async open() {
      if (!this.client) {
        this.client = new Client({ name: "test", version: "1.0.0" });
        const script = fileURLToPath(new URL("./mcp-server.js", import.meta.url));
        await this.client.connect(new StdioClientTransport({ command: process.execPath, args: [script], stderr: "ignore" }));
      }
      const client = this.client;
      await client.callTool({ name: "reset" });
      return { connect: async () => client, stats: async () => JSON.parse((await client.callTool({ name: "stats" })).content[0].text) };
    },
    close() {
      return this.client?.close();
    },
  },
};

for (const [name, transport] of Object.entries(transports)) {
  describe(`MCP over ${name}`, () => {
    after(() => transport.close?.());
    // A server with no calls seen yet, and a Health of the test's own.
    async function setup(options = {}, useBundle = bundle) {
      const server = await transport.open();
      const client = await server.connect();
      const time = fakeTime();
      const health = new Health();
      const tools = new McpRecovery(client, useBundle, { health, clock: time.clock, sleep: time.sleep, ...options });
      return { server, client, time, health, tools, calls: async (tool) => (await server.stats()).calls[tool] ?? 0 };
    }

    test("a transient tool error is retried after the server's hint", async () => {
      const s = await setup();
      const r = await s.tools.callTool({ name: "flaky.read", arguments: { q: "x" } });
      assert.equal(r.ok, true);
      assert.equal(r.attempts, 2);
      assert.deepEqual(r.result.content, [{ type: "text", text: "result" }]);
      assert.deepEqual(s.time.waits, [120]); // the server's 120 ms, over the backoff's 10 ms (50 ms at least)
      assert.equal(await s.calls("flaky.read"), 2);
    });

    test("a permission error marked retryable is authorize, not retried", async () => {
      const s = await setup();
      await s.tools.listTools(); // untrusted: its destructiveHint goes to the adapter, which ignores it
      const r = await s.tools.callTool({ name: "admin.delete", arguments: { id: 7 } });
      assert.deepEqual([r.ok, r.route, r.decision.rule, r.attempts], [false, "authorize", "needs_approval", 1]);
      assert.ok(r.decision.warnings.some((w) => w.kind === "ignored" && w.field === "idempotent"));
      assert.deepEqual(s.time.waits, []);
      assert.equal(await s.calls("admin.delete"), 1);
    });

    test("an absurd retryAfterMs stops at once, never slept on", async () => {
      const s = await setup({ trusted: true }); // slow.api is read-only: retried if anything
      const r = await s.tools.callTool({ name: "slow.api" });
      assert.deepEqual([r.route, r.decision.rule, r.retryAfterMs], ["stop", "budget:retry_after", 9999999999000]);
      assert.deepEqual(s.time.waits, []);
      assert.equal(await s.calls("slow.api"), 1);
    });

    test("injected text reaches the agent only flagged, in modelMessage", async () => {
      const s = await setup();
      const r = await s.tools.callTool({ name: "notes.read" });
      assert.equal(r.ok, false);
      assert.match(r.modelMessage, /^\[flagged: instruction-like text from the tool: [a-z_, ]+\] /);
      // No other member carries the server's words.
      const { modelMessage, decision, ...rest } = r;
      assert.ok(!JSON.stringify(rest).includes("Ignore all previous instructions"));
      assert.ok(!JSON.stringify(decision).replace(modelMessage, "").includes("Ignore all previous instructions"));
      assert.ok(INJECTED.includes("Ignore all previous instructions"));
    });

    test("a write whose answer was lost is not resent without a pinned key", async () => {
      const s = await setup();
      const r = await s.tools.callTool({ name: "orders.create", arguments: { amount: 5 } }, { timeout: 50 });
      assert.equal(r.ok, false);
      assert.notEqual(r.route, "retry");
      assert.equal(r.decision.rule, "gate:unknown_outcome");
      assert.equal(await s.calls("orders.create"), 1);
    });

    test("with a key the tool honours, the lost write is resent under the same key", async () => {
      const s = await setup({}, keyed);
      const r = await s.tools.callTool({ name: "orders.create", arguments: { amount: 5 } }, { timeout: 50 });
      assert.equal(r.ok, true);
      assert.deepEqual(r.result.content, [{ type: "text", text: "orders.create: already applied" }]);
      const { calls, keys, committed } = await s.server.stats();
      assert.equal(calls["orders.create"], 2);
      assert.match(keys["orders.create"][0], /^[0-9a-f]{32}$/);
      assert.equal(keys["orders.create"][1], keys["orders.create"][0]);
      assert.equal(committed["orders.create"].length, 1); // applied once
    });

    test("a trusted server's idempotentHint lets a lost answer be resent; an untrusted one's does not", async () => {
      const untrusted = await setup();
      const lost = await untrusted.tools.callTool({ name: "cache.put", arguments: { k: 1 } }, { timeout: 50 });
      assert.deepEqual([lost.ok, lost.decision.rule], [false, "gate:unknown_outcome"]);
      assert.equal(await untrusted.calls("cache.put"), 1);
      const trusted = await setup({ trusted: true });
      const resent = await trusted.tools.callTool({ name: "cache.put", arguments: { k: 1 } }, { timeout: 50 });
      assert.deepEqual([resent.ok, resent.attempts], [true, 2]);
      assert.equal(await trusted.calls("cache.put"), 2);
      assert.deepEqual(trusted.tools.annotations("cache.put"), { idempotentHint: true, destructiveHint: false });
    });

    test("an unknown tool is NOT_FOUND: stopped, not repaired or retried", async () => {
      const s = await setup();
      const r = await s.tools.callTool({ name: "no.such.tool", arguments: {} });
      assert.deepEqual([r.ok, r.route, r.decision.rule], [false, "stop", "default"]);
      assert.match(r.modelMessage, /Unknown tool: no\.such\.tool/);
      assert.equal(await s.calls("no.such.tool"), 1);
    });

    test("a missing resource is NOT_FOUND: stopped", async () => {
      const s = await setup();
      const r = await s.tools.callTool({ name: "files.get", arguments: { path: "missing.txt" } });
      assert.deepEqual([r.route, r.attempts], ["stop", 1]);
      assert.equal(await s.calls("files.get"), 1);
    });

    test("an open circuit stops every caller's calls to the failing tool", async () => {
      const s = await setup();
      const health = new Health();
      const first = new McpRecovery(s.client, bundle, { health, clock: s.time.clock, sleep: s.time.sleep });
      const second = new McpRecovery(await s.server.connect(), bundle, { health, clock: s.time.clock, sleep: s.time.sleep });
      const r1 = await first.callTool({ name: "status.check" });
      // Attempts spent (the policy's on_exhausted: its fallback); the circuit is open.
      assert.deepEqual([r1.route, r1.target, r1.decision.rule, r1.attempts], ["replace", "status.cached", "budget:attempts", 2]);
      assert.equal(health.circuit("status.check"), "open");
      const r2 = await second.callTool({ name: "status.check" });
      assert.deepEqual([r2.route, r2.target, r2.decision.rule, r2.attempts], ["replace", "status.cached", "circuit:open", 0]);
      assert.equal(await s.calls("status.check"), 2); // the second call was never made
    });

    test("a healthy server's business errors are repaired and never open its circuit", async () => {
      // The host knows a failed edit changed nothing (the hook); the server only said isError.
      const s = await setup({ sideEffect: ({ result }) => (result ? "none" : undefined) });
      for (let caller = 0; caller < 3; ++caller) {
        const r = await s.tools.callTool({ name: "notes.edit", arguments: { old_text: "## Status", new_text: "## Done" } });
        assert.deepEqual([r.route, r.decision.rule, r.attempts], ["repair", "anchor", 1]);
      }
      assert.equal(await s.calls("notes.edit"), 3);
      assert.equal(s.health.circuit("notes.edit"), "closed");
    });

    test("an AbortSignal ends a wait at once: the call rejects with its reason", async () => {
      const s = await setup({ sleep: (ms, signal) => new Promise((resolve) => signal.addEventListener("abort", () => resolve(false))) });
      const controller = new AbortController();
      const pending = s.tools.callTool({ name: "flaky.read" }, { signal: controller.signal });
      while ((await s.calls("flaky.read")) < 1) await new Promise((r) => setImmediate(r));
      controller.abort(new Error("user cancelled"));
      await assert.rejects(pending, /user cancelled/);
      assert.equal(await s.calls("flaky.read"), 1);
    });
  });
}

test("callers given no Health share the process's: one caller's open circuit stops another's", async () => {
  const server = await transports["in process"].open();
  const time = fakeTime();
  const options = { clock: time.clock, sleep: time.sleep };
  const first = new McpRecovery(await server.connect(), bundle, options);
  const second = new McpRecovery(await server.connect(), bundle, options);
  assert.equal((await first.callTool({ name: "status.check" })).attempts, 2);
  const r = await second.callTool({ name: "status.check" });
  assert.deepEqual([r.route, r.decision.rule, r.attempts], ["replace", "circuit:open", 0]);
  assert.equal((await server.stats()).calls["status.check"], 2);
});

test("annotations imply idempotence only from a trusted server", () => {
  assert.equal(idempotentFromAnnotations({ idempotentHint: true }, false), undefined);
  assert.equal(idempotentFromAnnotations({ idempotentHint: true }, true), true);
  assert.equal(idempotentFromAnnotations({ readOnlyHint: true, destructiveHint: true }, true), true);
  assert.equal(idempotentFromAnnotations({ destructiveHint: true }, true), false);
  assert.equal(idempotentFromAnnotations({}, true), undefined);
});

test("docs/javascript.md's MCP agent loop, taken from the page, runs against the server", async () => {
  const doc = readFileSync(join(root, "docs/javascript.md"), "utf8");
  const code = /```js\n([\s\S]*?)```/.exec(doc.slice(doc.indexOf("## MCP")))[1];
  // Inside the package, so that "recourse" and "recourse/mcp" resolve to it (self-reference).
  const file = fileURLToPath(new URL(`./.doc-agent-${process.pid}.mjs`, import.meta.url));
  writeFileSync(file, code);
  try {
    const { agent } = await import(pathToFileURL(file).href);
    const state = makeState();
    const [clientSide, serverSide] = InMemoryTransport.createLinkedPair();
    await makeServer(state).connect(serverSide);
    const client = new Client({ name: "agent", version: "1.0.0" });
    await client.connect(clientSide);
    const seen = [];
    // The model reads the tools, calls flaky.read, then admin.delete.
    const model = async (messages, tools) => {
      seen.push(messages.at(-1));
      assert.ok(tools.some((t) => t.name === "admin.delete"));
      if (messages.length === 1) return { toolCall: { name: "flaky.read", arguments: { q: "x" } } };
      return { toolCall: { name: "admin.delete", arguments: { id: 7 } } };
    };
    const answer = await agent(client, policies(false), model, "tidy up");
    assert.match(answer, /^needs a person: /);
    assert.deepEqual(seen[1], { role: "tool", content: [{ type: "text", text: "result" }] });
    assert.deepEqual([state.calls["flaky.read"], state.calls["admin.delete"]], [2, 1]);
    await client.close();
  } finally {
    unlinkSync(file);
  }
});

// A client (or a transport under it) that does what the SDK never should: rejects with null or
// undefined, answers with something other than a result object, or sends text cut inside a
// surrogate pair. Each is a failure decided by the policy, never a success and never a throw.
test("a falsy rejection, a non-object result and a lone surrogate are failures the policy decides", async () => {
  const { bundle } = compile(policies(false));
  const answers = [
    () => Promise.reject(null),
    () => Promise.reject(undefined),
    async () => "x",
    async () => ({ isError: true, content: [{ type: "text", text: "\ud800 upstream \udc00 busy" }] }),
  ];
  for (const [i, answer] of answers.entries()) {
    let calls = 0;
    const client = { callTool: () => (++calls, answer()) };
    const tools = new McpRecovery(client, bundle, { health: new Health(), sleep: async () => {} });
    const r = await tools.callTool({ name: "notes.edit", arguments: {} });
    assert.deepEqual([i, r.ok, r.route, calls], [i, false, "stop", 1]);
    assert.ok(!/[\ud800-\udfff]/.test(r.modelMessage), r.modelMessage);
  }
});
