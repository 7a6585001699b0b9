// The adapters on what JavaScript hosts hold: a fetch() Response, and the errors the official
// `openai` and `@anthropic-ai/sdk` packages build themselves from a local HTTP server's answers
// (loopback, maxRetries 0), then decided by a policy.
import assert from "node:assert/strict";
import { createServer } from "node:http";
import { after, before, test } from "node:test";

import Anthropic from "@anthropic-ai/sdk";
import OpenAI from "openai";

import { Health, Runner, adapt, compile, fromAnthropicError, fromOpenAIError, fromResponse } from "../src/index.js";

// The server answers each path with the status, headers and body the test queued for it.
const answers = new Map();
const requests = new Map();
const server = createServer((req, res) => {
  req.resume();
  req.on("end", () => {
    // A list of answers is served one per request, in order (`requests` counts them).
    requests.set(req.url, (requests.get(req.url) ?? 0) + 1);
    const queued = answers.get(req.url);
    const a = (Array.isArray(queued) ? queued.shift() : queued) ?? { status: 500, headers: {}, body: "no answer queued" };
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

test("openai: x-should-retry outranks the status both ways", async () => {
  const client = new OpenAI({ apiKey: "test", baseURL: `${base}/v1`, maxRetries: 0 });
  answers.set("/v1/chat/completions", { status: 503, headers: { "x-should-retry": "false" }, body: { error: { message: "down", type: "server_error" } } });
  const no = fromOpenAIError(await thrown(client.chat.completions.create({ model: "m", messages: [] })));
  assert.deepEqual([no.envelope.code, no.envelope.retryable], ["TRANSIENT", false]);
  assert.equal(bundle.decide(no.envelope, context).route, "stop");
  answers.set("/v1/chat/completions", { status: 409, headers: { "x-should-retry": "true" }, body: { error: { message: "busy", type: "conflict" } } });
  const yes = fromOpenAIError(await thrown(client.chat.completions.create({ model: "m", messages: [] })));
  assert.equal(yes.envelope.retryable, true);
});

// An event stream that starts, then fails: the SDKs throw an APIError with no status.
const sse = (events) => events.map(([event, data]) => `${event ? `event: ${event}\n` : ""}data: ${JSON.stringify(data)}\n\n`).join("");

test("anthropic: an overloaded_error event mid-stream is TRANSIENT; resent only if no output was shown", async () => {
  answers.set("/v1/messages", {
    status: 200,
    headers: { "content-type": "text/event-stream", "request-id": "req_stream" },
    body: sse([
      ["message_start", { type: "message_start", message: { id: "msg_1", type: "message", role: "assistant", content: [], model: "m", stop_reason: null, usage: { input_tokens: 1, output_tokens: 0 } } }],
      ["content_block_start", { type: "content_block_start", index: 0, content_block: { type: "text", text: "" } }],
      ["content_block_delta", { type: "content_block_delta", index: 0, delta: { type: "text_delta", text: "Hel" } }],
      ["error", { type: "error", error: { type: "overloaded_error", message: "Overloaded" } }],
    ]),
  });
  const client = new Anthropic({ apiKey: "test", baseURL: base, maxRetries: 0 });
  const shown = [];
  const error = await thrown((async () => {
    const stream = await client.messages.create({ model: "m", max_tokens: 8, messages: [{ role: "user", content: "hi" }], stream: true });
    for await (const event of stream) if (event.type === "content_block_delta") shown.push(event.delta.text);
  })());
  assert.ok(error instanceof Anthropic.APIError);
  assert.equal(error.status, undefined);
  const a = fromAnthropicError(error);
  assert.deepEqual([a.envelope.code, a.envelope.retryable, a.envelope.traceId], ["TRANSIENT", true, "req_stream"]);
  // ../shared/cases stream-partial-output-replayed: "Hel" reached the user, so no resend.
  assert.deepEqual(shown, ["Hel"]);
  assert.equal(bundle.decide(a.envelope, { ...context, streamOutputEmitted: true }).route, "stop");
  assert.equal(bundle.decide(a.envelope, { ...context, streamOutputEmitted: false }).route, "retry");
});

test("openai: an error chunk mid-stream is read as the stream's body", async () => {
  answers.set("/v1/chat/completions", {
    status: 200,
    headers: { "content-type": "text/event-stream" },
    body: sse([
      [null, { id: "c1", object: "chat.completion.chunk", created: 1, model: "m", choices: [{ index: 0, delta: { content: "Hi" }, finish_reason: null }] }],
      [null, { error: { message: "This model's maximum context length is 8192 tokens", type: "invalid_request_error", code: "context_length_exceeded" } }],
    ]),
  });
  const client = new OpenAI({ apiKey: "test", baseURL: `${base}/v1`, maxRetries: 0 });
  const error = await thrown((async () => {
    for await (const chunk of await client.chat.completions.create({ model: "m", messages: [], stream: true })) void chunk;
  })());
  assert.ok(error instanceof OpenAI.APIError);
  const a = fromOpenAIError(error);
  assert.deepEqual([a.envelope.code, a.envelope.retryable], ["CONTEXT_OVERFLOW", false]);
});

// One operation on a fake clock (its jitter seeded by `operationId`): `send()` is the SDK's call (its own retries off), `read` the
// adapter for its errors. Resolves to the done action, the waits and the last reply.
async function decided(operationId, send, read) {
  let now = 1_700_000_000_000;
  const waits = [];
  let reply;
  const runner = new Runner(bundle, { tool: "llm.chat", operationId }, { health: new Health() });
  const done = await runner.run({
    clock: () => now,
    sleep: async (ms) => (waits.push(ms), (now += ms)),
    async call() {
      try {
        reply = await send();
        return { outcome: "success" };
      } catch (error) {
        return { outcome: "failure", envelope: read(error).envelope, sideEffect: "none" };
      }
    },
  });
  return { done, waits, reply };
}

test("the SDKs' retries off, the runner decides: openai's 429 waits its Retry-After, then the call succeeds", async () => {
  answers.set("/v1/chat/completions", [
    { status: 429, headers: { "retry-after": "3" }, body: { error: { message: "Rate limit reached", type: "requests", code: "rate_limit_exceeded" } } },
    { status: 200, headers: {}, body: { id: "c1", object: "chat.completion", created: 1, model: "m", choices: [{ index: 0, message: { role: "assistant", content: "hello" }, finish_reason: "stop" }] } },
  ]);
  requests.delete("/v1/chat/completions");
  const client = new OpenAI({ apiKey: "test", baseURL: `${base}/v1`, maxRetries: 0 });
  const { done, waits, reply } = await decided("op-openai", () => client.chat.completions.create({ model: "m", messages: [{ role: "user", content: "hi" }] }), fromOpenAIError);
  assert.deepEqual([done.ending, done.attempt, waits], ["success", 2, [3000]]);
  assert.equal(reply.choices[0].message.content, "hello");
  assert.equal(requests.get("/v1/chat/completions"), 2); // the SDK itself sent each once
});

test("the SDKs' retries off, the runner decides: anthropic's 529 twice, then the attempts are spent", async () => {
  const overloaded = { status: 529, headers: {}, body: { type: "error", error: { type: "overloaded_error", message: "Overloaded" } } };
  answers.set("/v1/messages", [overloaded, overloaded, overloaded, overloaded]);
  requests.delete("/v1/messages");
  const client = new Anthropic({ apiKey: "test", baseURL: base, maxRetries: 0 });
  const { done, waits } = await decided("op-anthropic", () => client.messages.create({ model: "m", max_tokens: 8, messages: [{ role: "user", content: "hi" }] }), fromAnthropicError);
  assert.deepEqual([done.ending, done.attempt, done.decision.rule], ["decided", 4, "budget:attempts"]);
  // The default backoff (docs/language.md: exponential, base 250ms, factor 2, full jitter), seeded by the operation:
  // each wait within its cap (250 ms, 500 ms, 1 s), the same on every run.
  assert.deepEqual(waits, [217, 403, 96]);
  assert.equal(requests.get("/v1/messages"), 4); // attempts = 4, and no retry of the SDK's own
});
