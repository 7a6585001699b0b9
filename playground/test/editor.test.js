// The editor's positions (editor.js): a diagnostic's line and UTF-16 column as a string index.
import assert from "node:assert/strict";
import { test } from "node:test";

import { indexOf, splitLines } from "../editor.js";

test("a line and UTF-16 column is the string index of the character the compiler meant", () => {
  const text = 'version 1\npolicy "t" {\n  rule r when field == "😀" and bogus -> stop\n}\n';
  const line = text.split("\n")[2];
  const column = line.indexOf("bogus") + 1;
  assert.equal(text.slice(indexOf(text, 3, column)).slice(0, 5), "bogus");
  assert.equal(indexOf(text, 1, 1), 0);
  assert.equal(indexOf(text, 2, 999), text.indexOf("\n", 10), "clamped to the end of its line");
  assert.equal(indexOf(text, 99, 1), text.length, "past the last line: the last line's start");
});

test("\\r\\n, \\n and \\r each end a line, as the engine counts them", () => {
  assert.deepEqual(splitLines("a\r\nb\nc\rd"), ["a", "b", "c", "d"]);
  const text = "a\r\nbb\rccc";
  assert.equal(text[indexOf(text, 2, 2)], "b");
  assert.equal(text[indexOf(text, 3, 3)], "c");
});
