// recourse on WebAssembly, struct path: each decision is one Bundle.decideFields() call, the
// envelope's and the context's fields written into the C structs and the decision's read back
// (no JSON). Inputs are converted to the envelope and context objects before timing, as the
// C++ row converts them.
import { compilePeer, toCall } from './recourse-wasm-common.mjs';

export { pkgs, load } from './recourse-wasm-common.mjs';

export function prepare(lib) {
  const bundle = compilePeer(lib);
  return {
    async: false,
    convert: toCall,
    decide: ([envelope, context]) => bundle.decideFields(envelope, context).route,
    notes: 'WebAssembly (emscripten 3.1.6), decideFields: the C structs, no JSON',
  };
}
