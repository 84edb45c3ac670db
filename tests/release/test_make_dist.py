"""`make dist` installs the build front end and backend only, not the development toolchain (which took the venv
from 185 MB to 1.3 GB and about 50 s before the first line of the build)."""

from __future__ import annotations

import re
import subprocess
from pathlib import Path

from infra.paths import REPO_ROOT


def test_make_dist_installs_only_build_and_setuptools_at_the_pinned_versions(tmp_path: Path) -> None:
    venv = tmp_path / "venv"
    planned = subprocess.run(
        ["make", "-n", "dist", f"VENV={venv}"], cwd=REPO_ROOT, capture_output=True, text=True, check=True
    ).stdout
    installs = [line for line in planned.splitlines() if " install " in line]
    assert len(installs) == 1, planned
    [install] = installs
    assert "-r " not in install and "-e " not in install and "requirements.txt" not in install
    # The packages the one install names: the lines of requirements-dev.txt its grep selects.
    pattern = re.search(r"grep -E '([^']+)' requirements-dev\.txt", install)
    assert pattern, install
    pins = [
        line
        for line in (REPO_ROOT / "requirements-dev.txt").read_text().splitlines()
        if re.search(pattern.group(1), line)
    ]
    assert sorted(pin.split("==")[0] for pin in pins) == ["build", "setuptools"], pins
    assert "--no-isolation" in planned, "the build uses the backend installed here, not a download of its own"
