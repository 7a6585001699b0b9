// The adapters on what JavaScript hosts hold: a fetch() Response, and the errors the official
// `openai` and `@anthropic-ai/sdk` packages build themselves from a local HTTP server's answers
// (loopback, maxRetries 0), then decided by a policy.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";

import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";

import { adapt, compile, fromAnthropicError, fromOpenAIError, fromResponse } from "../src/index.js";

// The server answers each path with the status, headers and body the test queued for it.
const answers = new Map();
const server = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    const a = answers.get(req.url) ?? { status: 500, headers: {}, body: "no answer queued" };
    res.writeHead(a.status, { "content-type": typeof a.body === "string" ? "text/plain" : "application/json", ...a.headers });
    res.end(typeof a.body === "string" ? a.body : JSON.stringify(a.body));
  });
});
let base;
before(async () => {
  await new Promise((resolve) => server.listen(0, "127.0.0.1", resolve));
  base = `http://127.0.0.1:${server.address().port}`;
});
after(() => new Promise((resolve) => server.close(resolve)));

const { bundle } = compile(`version 1
policy "llm.chat" {
  tool { idempotent = true }
  limits { attempts = 4  retry_after_max = 60s }
  rule throttled when code in [TRANSIENT, RATE_LIMITED] and retryable -> retry
  rule quota when code == QUOTA_EXCEEDED -> escalate "billing"
  rule network when code == TIMEOUT -> retry
  default -> stop
}`);
const context = { tool: "llm.chat", sideEffect: "none", attempt: 1, operationId: "op-llm" };

async function thrown(promise) {
  try {
    await promise;
  } catch (error) {
    return error;
  }
  assert.fail("the call did not fail");
}

test("openai: a 429 with Retry-After is RATE_LIMITED, retried after the server's delay", async () => {
  answers.set("/v1/chat/completions", {
    status: 429,
    headers: { "retry-after": "2", "x-request-id": "req_abc" },
    body: { error: { message: "Rate limit reached for requests", type: "requests", code: "rate_limit_exceeded" } },
  });
  const client = new OpenAI({ apiKey: "test", baseURL: `${base}/v1`, maxRetries: 0 });
  const error = await thrown(client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] }));
  assert.ok(error instanceof OpenAI.RateLimitError);
  const a = fromOpenAIError(error);
  assert.equal(a.envelope.code, "RATE_LIMITED");
  assert.equal(a.envelope.retryAfterMs, 2000);
  assert.equal(a.envelope.traceId, "req_abc");
  const d = bundle.decide(a.envelope, context);
  assert.deepEqual([d.route, d.rule, d.delayMs], ["retry", "throttled", 2000]);
});

test("openai: insufficient_quota is not retried", async () => {
  answers.set("/v1/chat/completions", {
    status: 429,
    headers: {},
    body: { error: { message: "You exceeded your current quota", type: "insufficient_quota", code: "insufficient_quota" } },
  });
  const client = new OpenAI({ apiKey: "test", baseURL: `${base}/v1`, maxRetries: 0 });
  const a = fromOpenAIError(await thrown(client.chat.completions.create({ model: "m", messages: [] })));
  assert.deepEqual([a.envelope.code, a.envelope.retryable], ["QUOTA_EXCEEDED", false]);
  assert.equal(bundle.decide(a.envelope, context).route, "escalate");
});

test("openai: a refused connection is a transport error", async () => {
  const closed = createServer();
  await new Promise((resolve) => closed.listen(0, "127.0.0.1", resolve));
  const port = closed.address().port;
  await new Promise((resolve) => closed.close(resolve));
  const client = new OpenAI({ apiKey: "test", baseURL: `http://127.0.0.1:${port}/v1`, maxRetries: 0 });
  const error = await thrown(client.chat.completions.create({ model: "m", messages: [] }));
  assert.ok(error instanceof OpenAI.APIConnectionError);
  const a = fromOpenAIError(error);
  assert.equal(a.envelope.code, "TRANSIENT");
  assert.equal(a.envelope.retryable, true);
});

test("anthropic: 529 overloaded_error is TRANSIENT and retried", async () => {
  answers.set("/v1/messages", {
    status: 529,
    headers: { "request-id": "req_011" },
    body: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } },
  });
  const client = new Anthropic({ apiKey: "test", baseURL: base, maxRetries: 0 });
  const error = await thrown(client.messages.create({ model: "m", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }));
  assert.ok(error instanceof Anthropic.APIError);
  const a = fromAnthropicError(error);
  assert.deepEqual([a.envelope.code, a.envelope.retryable, a.envelope.traceId], ["TRANSIENT", true, "req_011"]);
  assert.equal(bundle.decide(a.envelope, context).route, "retry");
});

test("anthropic: a 429 rate_limit_error with retry-after", async () => {
  answers.set("/v1/messages", {
    status: 429,
    headers: { "retry-after": "7" },
    body: { type: "error", error: { type: "rate_limit_error", message: "Number of requests has exceeded your rate limit" } },
  });
  const client = new Anthropic({ apiKey: "test", baseURL: base, maxRetries: 0 });
  const a = fromAnthropicError(await thrown(client.messages.create({ model: "m", max_tokens: 8, messages: [] })));
  assert.deepEqual([a.envelope.code, a.envelope.retryAfterMs], ["RATE_LIMITED", 7000]);
  const d = bundle.decide(a.envelope, context);
  assert.deepEqual([d.route, d.delayMs], ["retry", 7000]);
});

test("fetch: a 503 Response, its body still readable", async () => {
  answers.set("/search", { status: 503, headers: { "retry-after": "3" }, body: "upstream connect error" });
  const response = await fetch(`${base}/search`);
  const a = await fromResponse(response);
  assert.deepEqual([a.envelope.code, a.envelope.retryable, a.envelope.retryAfterMs, a.mapping], ["TRANSIENT", true, 3000, "http 503"]);
  assert.equal(await response.text(), "upstream connect error");
});

test("adapt: an HTTP-date Retry-After needs nowMs; a bad raw form throws", () => {
  const raw = { protocol: "http", status: 503, headers: { "Retry-After": "Wed, 21 Oct 2015 07:28:00 GMT" } };
  assert.equal(adapt(raw, { nowMs: Date.UTC(2015, 9, 21, 7, 27, 50) }).envelope.retryAfterMs, 10000);
  assert.throws(() => adapt("not an object"), /raw|object|JSON/);
});
