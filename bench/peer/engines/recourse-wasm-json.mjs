// recourse on WebAssembly, JSON path: each decision is one Bundle.decideJson() call, the
// envelope and the context as JSON text in (stringified before timing, as the CEL engines get
// BigInts), the decision's JSON out, whose first member is the route.
import { compilePeer, toCall } from './recourse-wasm-common.mjs';

export { pkgs, load } from './recourse-wasm-common.mjs';

export function prepare(lib) {
  const bundle = compilePeer(lib);
  const route = (json) => json.slice(10, json.indexOf('"', 10)); // {"route":"retry",...
  return {
    async: false,
    convert: (e) => toCall(e).map((x) => JSON.stringify(x)),
    decide: ([envelope, context]) => route(bundle.decideJson(envelope, context)),
    notes: 'WebAssembly (emscripten 3.1.6), decideJson: JSON text in, decision JSON out',
  };
}
