"""The command line on tables as people write them: R's ``write.csv`` and pandas' ``to_csv()``
(with their index column), dates, class-like targets, several problems at once; its start-up
time and the licences of its optional peers."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def test_every_cleanlab_requirement_is_apache_licensed():
    """cleanlab is AGPL-3.0 up to 2.6 and Apache-2.0 from 2.9: every extra asks for >= 2.9."""
    requirements = re.findall(r'"cleanlab([^"]*)"', (ROOT / "pyproject.toml").read_text())
    assert requirements, "pyproject.toml names cleanlab nowhere any more: update this test"
    floors = [re.fullmatch(r">=(\d+)\.(\d+)(?:\.\d+)?", spec) for spec in requirements]
    assert all(floors), f"every cleanlab requirement needs a >= floor: {requirements}"
    assert all((int(f[1]), int(f[2])) >= (2, 9) for f in floors), requirements
