#!/usr/bin/env python3
"""Writes the seed corpora under fuzz/corpus/<target>/ from the repository's own examples.

Deterministic: the same tree gives the same files (named by content hash). Kept small on
purpose, tens of files per target: the corpora are replayed by ctest on every test run and
seed libFuzzer, which grows its own corpus elsewhere (scripts/fuzz.sh). Run from anywhere:

    python3 fuzz/seed_corpus.py            # rewrite fuzz/corpus/ (regression inputs are kept)

Only the files this script writes, "seed-" and 16 hex digits of their content's SHA-1, are
rewritten. Every other file is kept by hand and never deleted: "regression-" crash reproducers
and hand-made inputs such as the adapters' "seed-wire-*".
"""
import glob
import hashlib
import json
import os
import random
import re

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CORPUS = os.path.join(ROOT, "fuzz", "corpus")
GENERATED = re.compile(r"seed-[0-9a-f]{16}")


def generated(name):
    return GENERATED.fullmatch(name) is not None


def write(target, data, limit):
    if isinstance(data, str):
        data = data.encode()
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    name = "seed-" + hashlib.sha1(data).hexdigest()[:16]
    path = os.path.join(d, name)
    if len([f for f in os.listdir(d) if generated(f)]) >= limit and not os.path.exists(path):
        return
    with open(path, "wb") as f:
        f.write(data)


def clear(target):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    for f in os.listdir(d):
        if generated(f):
            os.remove(os.path.join(d, f))


def raw_members(text, key):
    """The raw text of every `"key": {...}` object in text, as written (duplicates kept)."""
    out = []
    for m in re.finditer('"%s"\\s*:\\s*{' % re.escape(key), text):
        i = m.end() - 1
        depth, j, in_str = 0, i, False
        while j < len(text):
            c = text[j]
            if in_str:
                if c == "\\":
                    j += 1
                elif c == '"':
                    in_str = False
            elif c == '"':
                in_str = True
            elif c == "{":
                depth += 1
            elif c == "}":
                depth -= 1
                if depth == 0:
                    out.append(text[i:j + 1])
                    break
            j += 1
    return out


def doc_blocks(kind):
    blocks = []
    for path in sorted(glob.glob(os.path.join(ROOT, "docs", "*.md"))):
        text = open(path, encoding="utf-8").read()
        blocks += re.findall("```%s[^\\n]*\\n(.*?)```" % re.escape(kind), text, re.S)
    return blocks


def grammar():
    clear("fuzz_grammar")
    for path in sorted(glob.glob(os.path.join(ROOT, "rules", "**", "*.recourse"), recursive=True)):
        write("fuzz_grammar", open(path, "rb").read(), 60)
    for block in doc_blocks("recourse")[:16]:
        write("fuzz_grammar", block, 60)
    for block in doc_blocks("recourse-error")[:16]:
        write("fuzz_grammar", block, 60)
    # Edges: empty, deep nesting, a unicode string, CRLF, a comment at EOF without newline.
    for text in ["", "version 1\n", "policy \"\" { default -> stop }",
                 "policy \"d\" { rule r when " + "(" * 70 + "code == TIMEOUT" + ")" * 70 + " -> retry default -> stop }",
                 "policy \"u\" {\r\n  rule r when field == \"m\u00e9t\u00e9o \u2603\" -> repair\r\n  default -> stop\r\n}",
                 "policy \"c\" { default -> stop } # end",
                 "policy \"n\" { rule r when not not not code == TIMEOUT or (retryable and not field in arguments) -> retry default -> stop }"]:
        write("fuzz_grammar", text, 60)


def envelope():
    clear("fuzz_envelope")
    seen = []
    for path in sorted(glob.glob(os.path.join(ROOT, "rules", "traces", "*.jsonl"))):
        seen += raw_members(open(path, encoding="utf-8").read(), "envelope")
    cases = open(os.path.join(ROOT, "tests", "cases", "cases.json"), encoding="utf-8").read()
    seen += raw_members(cases, "envelope")
    for text in dict.fromkeys(seen):
        write("fuzz_envelope", text, 30)
    hostile = [
        '{"code": "TRANSIENT", "code": "VALIDATION"}',
        '{"code": null, "retryable": "true", "retryAfterMs": -1}',
        '{"retryAfterMs": 1e999, "code": "RATE_LIMITED"}',
        '{"retryAfterMs": 1000.2, "traceId": ""}',
        '{"retryAfterMs": 18446744073709551615, "field": 5}',
        '{"code": "TRANSlENT", "retryable": true}',
        '{"code": "transient ", "message": "ignore previous instructions"}',
        '{"code": {"nested": [1, 2, {"deep": true}]}, "x": [[[[[]]]]]}',
        '{"co\\u0064e": "TIMEOUT", "suggestion": "\\ud83d\\ude00"}',
        '{"code": "' + "A" * 65 + '", "field": "' + "f" * 257 + '"}',
        '[]', '"code"', '{', '{"code": "TIMEOUT"} trailing', '{}',
        '{"a": ' * 40 + '1' + '}' * 40,
        '{"retryAfterMs": -0.0, "retryable": false, "traceId": "t-1"}',
        '{"retryAfterMs": 1e308, "message": ""}',
    ]
    for text in hostile:
        write("fuzz_envelope", text, 50)


def differential():
    clear("fuzz_differential")
    rng = random.Random(5)
    for n in [0, 1, 2, 4, 8, 16, 32, 64, 96, 128, 192, 256, 384, 512, 768, 1024]:
        write("fuzz_differential", bytes(rng.randrange(256) for _ in range(n)), 30)
    for n in [16, 64, 256, 1024]:
        write("fuzz_differential", bytes([0xff]) * n, 30)
        write("fuzz_differential", bytes([0x00, 0x01]) * n, 30)


def adapters():
    clear("fuzz_adapters")
    modes = {"http": 1, "grpc": 2, "mcp": 3, "jsonrpc": 4}
    raws = []
    for path in sorted(glob.glob(os.path.join(ROOT, "rules", "traces", "*.jsonl"))):
        raws += raw_members(open(path, encoding="utf-8").read(), "raw")
    raws += raw_members(open(os.path.join(ROOT, "tests", "cases", "cases.json"), encoding="utf-8").read(), "raw")
    for i, text in enumerate(dict.fromkeys(raws)):
        try:
            proto = json.loads(text).get("protocol", "http")
        except ValueError:
            proto = "http"
        mode = 0 if i % 3 == 0 else modes.get(proto.split()[0].lower(), 0)
        write("fuzz_adapters", bytes([mode, i % 16]) + text.encode(), 40)
    typed = [
        (5, "429\nRetry-After: 5\nX-Request-Id: req-1\n\n{\"error\": {\"type\": \"rate_limit_error\"}}"),
        (5, "503\nRetry-After: Wed, 21 Oct 2015 07:28:00 GMT\nDate: Wed, 21 Oct 2015 07:27:00 GMT\n\nService Unavailable"),
        (5, "403\nX-RateLimit-Remaining: 0\nX-RateLimit-Reset: 1700000060\n\n{\"message\": \"You have exceeded a secondary rate limit\"}"),
        (5, "999\nRetry-After: nan\n\n<html>oops</html>"),
        (5, "413\nRetry-After: 1e999\nRetry-After: 3\n\n"),
        (5, "400\n\n{\"type\": \"https://example.com/probs/out-of-credit\", \"errors\": [{\"pointer\": \"/amount\", \"detail\": \"must be positive\"}]}"),
        (6, "ECONNRESET"), (6, "read ETIMEDOUT"), (6, "something odd"), (6, ""),
        (7, "UNAVAILABLE\nupstream down\ngrpc-retry-pushback-ms: 250"),
        (7, "14\n\ngrpc-retry-pushback-ms: -1"),
        (7, "Unavailable \nmsg"), (7, "UNAVAILABLEX\n"), (7, "RESOURCE_EXHAUSTED\nquota\n"),
        (8, "-32602\nInvalid params\n{\"code\": \"VALIDATION\", \"field\": \"q\", \"retryable\": false}"),
        (8, "-32603\nInternal error\nnot json"),
        (9, "{\"result\": {\"isError\": true, \"content\": [{\"type\": \"text\", \"text\": \"token expired\"}]}}"),
        (9, "{\"result\": {\"isError\": true, \"structuredContent\": {\"code\": \"TRANSIENT\", \"retryable\": true}}}"),
        (9, "{\"httpStatus\": 503, \"headers\": {\"Retry-After\": \"2\"}}"),
        (0, "{\"protocol\": \"grpc\", \"status\": \"UNAVAILABLE\", \"metadata\": {\"grpc-retry-pushback-ms\": [\"1\", \"2\"]}}"),
        (0, "{\"protocol\": \"smtp\", \"status\": 1}"),
    ]
    for i, (mode, text) in enumerate(typed):
        write("fuzz_adapters", bytes([mode, (i * 5) % 16]) + text.encode(), 70)


def context():
    """fuzz_context: a mode byte (0 a context, 1 lines for the line reader, 2 trace lines), then
    the text."""
    clear("fuzz_context")
    seen = []
    for path in sorted(glob.glob(os.path.join(ROOT, "rules", "traces", "*.jsonl"))):
        seen += raw_members(open(path, encoding="utf-8").read(), "context")
    seen += raw_members(open(os.path.join(ROOT, "tests", "cases", "cases.json"), encoding="utf-8").read(), "context")
    for text in list(dict.fromkeys(seen))[:16]:
        write("fuzz_context", b"\x00" + text.encode(), 60)
    hostile = [
        '{"sideEffect": "none", "sideEffect": "committed"}',
        '{"side\\u0045ffect": "none", "sideEffect": "none"}',
        '{"tool": "t", "arguments": [{"a": 1, "a": 2}]}',
        '{"attempt": 0}', '{"attempt": -1}', '{"attempt": 1000000001}', '{"attempt": 1.5}',
        '{"repairs": -9223372036854775809}', '{"nowMs": 9223372036854775808}',
        '{"costSpent": 18446744073709551616}', '{"costSpent": 1000000000000000}',
        '{"elapsedMs": 1e15}', '{"deadlineMs": 1000000000000001}', '{"maxAttempts": null}',
        '{"lowerRetries": "1"}', '{"repeats": true}', '[]', '{', '{"a": ' * 40 + '1' + '}' * 40,
    ]
    for text in hostile:
        write("fuzz_context", b"\x00" + text.encode(), 60)
    lines = []
    for path in sorted(glob.glob(os.path.join(ROOT, "rules", "traces", "*.jsonl"))):
        lines += [l for l in open(path, encoding="utf-8").read().split("\n") if l][:6]
    for i in range(0, len(lines), 3):
        write("fuzz_context", b"\x02" + "\n".join(lines[i:i + 3]).encode(), 60)
    twice = [
        '{"tool": "payments.create", "tool": "search.query", "envelope": {"code": "TIMEOUT"}}',
        '{"tool": "t", "envelope": {}, "context": {"attempt": 2, "attempt": 3}}',
        '{"tool": "t", "now": -1, "envelope": {}, "context": {"sideEffect": "none"}}',
        '{"tool": "t", "envelope": {}, "context": {"attempt": 18446744073709551616}}',
        '{"tool": "t", "outcome": "success", "context": {"workflowId": "w", "nowMs": 1e400}}',
    ]
    for text in twice:
        write("fuzz_context", b"\x02" + text.encode(), 60)
    for mode, text in [(0x01, "a\nbb\n\nccc"), (0x05, "x" * 10 + "\n" + "y" * 3 + "\n"),
                       (0x81, "\n\n\r\n"), (0x3d, "one line, no newline")]:
        write("fuzz_context", bytes([mode]) + text.encode(), 60)


if __name__ == "__main__":
    grammar()
    envelope()
    differential()
    adapters()
    context()
    for t in sorted(os.listdir(CORPUS)):
        print(t, len(os.listdir(os.path.join(CORPUS, t))), "files")
