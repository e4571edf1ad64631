"""The README's Python examples run as written (in order, in one namespace)."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

README = Path(__file__).resolve().parents[1] / "README.md"


def test_readme_python_blocks_run(tmp_path, monkeypatch):
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), flags=re.DOTALL)
    assert len(blocks) >= 3
    monkeypatch.chdir(tmp_path)  # the examples write model files
    namespace: dict = {}
    for block in blocks:
        exec(compile(block, str(README), "exec"), namespace)
    # What the README's comments promise.
    assert abs(namespace["model"].epsilon_ - 0.2) <= 0.05
    assert namespace["metric"].rank_ == 1
    direction = np.zeros(10)
    direction[:2] = 1 / np.sqrt(2)
    assert abs(direction @ namespace["metric"].components_[0]) > 0.95


def test_user_guide_restart_example_prints_what_its_comments_say(capsys):
    guide = README.parent / "docs" / "user_guide.md"
    blocks = re.findall(r"```python\n(.*?)```", guide.read_text(), flags=re.DOTALL)
    (block,) = [block for block in blocks if "n_init" in block]
    exec(compile(block, str(guide), "exec"), {})
    printed = capsys.readouterr().out.split("\n")[:-1]
    promised = [" ".join(line[2:].split()[:3]) for line in block.splitlines() if line[:2] == "# "]
    assert printed == promised[-2:]
