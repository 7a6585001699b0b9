"""Every bundled trace line decided by the package equals the command line's decision."""

import json
import subprocess

import pytest

import recourse
from conftest import CLI, ROOT

LINES = [(path.name, i, json.loads(line))
         for path in sorted((ROOT / "rules" / "traces").glob("*.jsonl"))
         for i, line in enumerate(path.read_text().splitlines())
         if line.strip() and ("envelope" in line or "raw" in line)]  # not an outcome line


def cli_decision(tmp_path, envelope, context, raw):
    (tmp_path / "e.json").write_text(json.dumps(envelope))
    (tmp_path / "c.json").write_text(json.dumps(context))
    args = [str(CLI), "decide", "--policy", str(ROOT / "rules" / "examples"), "--format", "json",
            "-e", str(tmp_path / "e.json"), "-c", str(tmp_path / "c.json")]
    if raw:
        args += ["--from", "auto"]
    out = subprocess.run(args, capture_output=True, text=True)
    assert out.stdout, out.stderr
    return json.loads(out.stdout)


def test_the_traces_are_there():
    assert len(LINES) >= 100  # 111 lines, of which some report a success


@pytest.mark.parametrize("name,index,line", LINES, ids=[f"{n}:{i + 1}" for n, i, _ in LINES])
def test_decision_equals_the_command_line(bundle, tmp_path, name, index, line):
    context = line["context"]
    if "raw" in line:
        envelope = recourse.from_raw(line["raw"])
        source = line["raw"]
    else:
        envelope = source = line["envelope"]
    expected = cli_decision(tmp_path, source, context, "raw" in line)
    from_dict = bundle.decide(envelope, context)
    assert from_dict.to_dict() == expected
    if "raw" not in line:
        assert bundle.decide(json.dumps(envelope), json.dumps(context)).to_dict() == expected
