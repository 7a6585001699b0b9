"""docs/python.md's agent loop is examples/python/agent.py, and prints the output shown."""

import re
import subprocess
import sys

from conftest import ROOT


def section(text, heading):
    start = text.index(heading)
    end = text.find("\n## ", start + len(heading))
    return text[start:end if end >= 0 else len(text)]


def test_the_agent_loop_runs_as_documented():
    doc = section((ROOT / "docs" / "python.md").read_text(), "## A complete agent loop")
    code, output = re.findall(r"```(?:python|text)\n(.*?)```", doc, re.S)
    example = ROOT / "examples" / "python" / "agent.py"
    assert code == example.read_text()
    assert len(code.splitlines()) < 40
    run = subprocess.run([sys.executable, str(example)], cwd=ROOT, capture_output=True,
                         text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    assert run.stdout == output
