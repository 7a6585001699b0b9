// What a link or a saved file carries: the policy, the envelope and the context, as typed.
// A link keeps them in the URL's fragment (never sent to a server): "#z=" and the state's JSON,
// deflated (CompressionStream "deflate-raw") and base64url-encoded; "#j=" the JSON without
// compression, where a browser lacks CompressionStream. A saved file is the same JSON:
// {"recourse-playground": 1, "policy", "envelope", "context"}.

const FORMAT = "recourse-playground";

/** The state as its JSON object. */
export function toJson({ policy, envelope, context }) {
  return { [FORMAT]: 1, policy, envelope, context };
}

/**
 * A saved file's state ({policy, envelope, context}); a .recourse file's text is a policy
 * alone. Throws an Error saying why the JSON is not a playground file.
 */
export function fromFile(name, text) {
  if (!name.endsWith(".json")) return { policy: text };
  const json = JSON.parse(text);
  if (!json || json[FORMAT] !== 1 || typeof json.policy !== "string")
    throw new Error(`${name} is not a playground file ({"${FORMAT}": 1, "policy": ...})`);
  const asText = (value) => (typeof value === "string" ? value : JSON.stringify(value ?? {}, null, 2));
  return { policy: json.policy, envelope: asText(json.envelope), context: asText(json.context) };
}

function base64url(bytes) {
  let binary = "";
  for (let i = 0; i < bytes.length; i += 0x8000) binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  return btoa(binary).replace(/\+/g, "-").replace(/\//g, "_").replace(/=+$/, "");
}

function unbase64url(text) {
  const binary = atob(text.replace(/-/g, "+").replace(/_/g, "/"));
  return Uint8Array.from(binary, (c) => c.charCodeAt(0));
}

async function through(bytes, transform) {
  return new Uint8Array(await new Response(new Blob([bytes]).stream().pipeThrough(transform)).arrayBuffer());
}

/** The fragment ("#z=...") that carries `state`. */
export async function toFragment(state) {
  const json = new TextEncoder().encode(JSON.stringify(toJson(state)));
  if (typeof CompressionStream !== "function") return `#j=${base64url(json)}`;
  return `#z=${base64url(await through(json, new CompressionStream("deflate-raw")))}`;
}

/** The state a fragment carries, or null for none; throws an Error for a damaged one. */
export async function fromFragment(fragment) {
  const match = /^#([zj])=([A-Za-z0-9_-]*)$/.exec(fragment);
  if (!match) return null;
  let bytes = unbase64url(match[2]);
  if (match[1] === "z") bytes = await through(bytes, new DecompressionStream("deflate-raw"));
  return fromFile("link.json", new TextDecoder().decode(bytes));
}

/** Offers `state` as a file download named `name`. */
export function download(name, state) {
  const blob = new Blob([JSON.stringify(toJson(state), null, 2) + "\n"], { type: "application/json" });
  const a = document.createElement("a");
  a.href = URL.createObjectURL(blob);
  a.download = name;
  a.click();
  setTimeout(() => URL.revokeObjectURL(a.href), 1000);
}
