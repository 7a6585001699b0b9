// A small static file server for the playground's site (build.mjs writes it) on loopback: GET
// and HEAD of files under the folder, with their content types; nothing else (no listing, no
// path outside the folder). Usage: node playground/serve.mjs [dir] [port] (port 0: any free one).
import { createReadStream, statSync } from "node:fs";
import { createServer } from "node:http";
import { extname, join, resolve, sep } from "node:path";
import { fileURLToPath } from "node:url";

const types = {
  ".html": "text/html; charset=utf-8",
  ".js": "text/javascript; charset=utf-8",
  ".cjs": "text/javascript; charset=utf-8",
  ".css": "text/css; charset=utf-8",
  ".json": "application/json",
  ".png": "image/png",
  ".d.ts": "text/plain; charset=utf-8",
};

/**
 * Serves `dir` on `host`:`port` (port 0 picks a free one). Resolves to {server, url} once it
 * listens; server.close() stops it.
 */
export function serve(dir, { port = 0, host = "127.0.0.1" } = {}) {
  const base = resolve(dir);
  const server = createServer((request, response) => {
    const fail = (status, text) => response.writeHead(status, { "content-type": "text/plain" }).end(text + "\n");
    if (request.method !== "GET" && request.method !== "HEAD") return fail(405, "only GET and HEAD");
    let path;
    try {
      path = decodeURIComponent(new URL(request.url, "http://x").pathname);
    } catch {
      return fail(400, "bad path");
    }
    let file = resolve(join(base, path));
    if (file !== base && !file.startsWith(base + sep)) return fail(403, "outside the site");
    let stat;
    try {
      stat = statSync(file);
      if (stat.isDirectory()) stat = statSync((file = join(file, "index.html")));
    } catch {
      return fail(404, "not found");
    }
    if (!stat.isFile()) return fail(404, "not found");
    response.writeHead(200, {
      "content-type": types[extname(file)] || "application/octet-stream",
      "content-length": stat.size,
      "cache-control": "no-cache",
      "x-content-type-options": "nosniff",
    });
    if (request.method === "HEAD") return response.end();
    createReadStream(file).pipe(response);
  });
  return new Promise((done, failed) => {
    server.once("error", failed);
    server.listen(port, host, () => {
      const { port: bound } = server.address();
      done({ server, url: `http://${host}:${bound}/` });
    });
  });
}

if (process.argv[1] && resolve(process.argv[1]) === fileURLToPath(import.meta.url)) {
  const here = fileURLToPath(new URL("..", import.meta.url));
  const dir = process.argv[2] || join(here, "build/playground");
  const { url } = await serve(dir, { port: Number(process.argv[3] ?? 8765) });
  console.log(`recourse playground: ${url}  (serving ${dir}; Ctrl-C stops it)`);
}
