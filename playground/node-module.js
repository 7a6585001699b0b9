// node:module in the page (index.html's import map sends the package's import here): the
// package's wasm.js calls createRequire(import.meta.url)("../wasm/recourse.cjs"), and the page
// has already run that file as a classic script, which defined the global createRecourse.

/** A require() that returns the engine's loader, whatever it is asked for. */
export function createRequire() {
  return () => {
    if (typeof globalThis.createRecourse !== "function")
      throw new Error("recourse/wasm/recourse.cjs did not load: build it with scripts/wasm.sh");
    return globalThis.createRecourse;
  };
}
