"""Handler cold import time: what a Lambda cold start pays before the handler runs, on this machine.

Each module is imported in a fresh interpreter (`python -c`), timed around the import statement alone, several
times; the median is reported. The same run times `import boto3` and boto3 plus the Powertools REST resolver, the
floor every Powertools handler on boto3 pays, so the handlers' own share shows. `python -X importtime` names the
heaviest top-level imports of the poller.
"""

from __future__ import annotations

import os
import statistics
import subprocess
import sys
from pathlib import Path
from typing import Any, Final

NAME: Final = "cold_import"
ROOT: Final = Path(__file__).resolve().parents[2]
REFERENCES: Final = {
    "import boto3": "import boto3",
    "boto3 + APIGatewayRestResolver": (
        "import boto3\nfrom aws_lambda_powertools.event_handler import APIGatewayRestResolver"
    ),
    "import queue_core": "import queue_core",
}
HANDLERS: Final = ("producer", "poller", "dlq_redriver", "visibility_sweeper")
_TIMER = "import time\n_start = time.perf_counter()\n{statement}\nprint(time.perf_counter() - _start)"


def _environment() -> dict[str, str]:
    """What a deployed function has: the layer and the function on the path, its settings, no AWS access."""
    environment = dict(os.environ)
    layer = ROOT / "layers" / "queue_core" / "python"
    environment["PYTHONPATH"] = os.pathsep.join([str(layer), str(ROOT)])
    environment.update(
        {
            "TABLE_NAME": "bench",
            "AWS_DEFAULT_REGION": "us-east-1",
            "AWS_ACCESS_KEY_ID": "bench",
            "AWS_SECRET_ACCESS_KEY": "bench",
            "POWERTOOLS_SERVICE_NAME": "bench",
            "POWERTOOLS_METRICS_NAMESPACE": "Bench",
            "POWERTOOLS_TRACE_DISABLED": "true",
        }
    )
    environment.pop("PYTHONDONTWRITEBYTECODE", None)
    return environment


def _seconds(statement: str, repeats: int) -> float:
    samples = []
    for _ in range(repeats):
        answer = subprocess.run(
            [sys.executable, "-c", _TIMER.format(statement=statement)],
            capture_output=True,
            text=True,
            env=_environment(),
            cwd=ROOT,
            timeout=120,
            check=True,
        )
        samples.append(float(answer.stdout.strip().splitlines()[-1]))
    return statistics.median(samples)


def heaviest_imports(module: str, count: int = 6) -> list[tuple[str, float]]:
    """The modules `module` imports directly, by cumulative time (`-X importtime`), in milliseconds."""
    answer = subprocess.run(
        [sys.executable, "-X", "importtime", "-c", f"import {module}"],
        capture_output=True,
        text=True,
        env=_environment(),
        cwd=ROOT,
        timeout=120,
        check=True,
    )
    children: list[tuple[str, float]] = []
    for line in answer.stderr.splitlines():
        fields = line.removeprefix("import time:").split("|")
        if len(fields) != 3 or not fields[1].strip().isdigit():
            continue
        name = fields[2][1:]
        depth = (len(name) - len(name.lstrip())) // 2
        if depth == 1:
            children.append((name.strip(), int(fields[1]) / 1000))
        elif depth == 0:
            if name.strip() == module:
                return sorted(children, key=lambda pair: -pair[1])[:count]
            children = []
    return []


def run(quick: bool = False) -> dict[str, Any]:
    repeats = 1 if quick else 3
    rows = []
    for label, statement in REFERENCES.items():
        rows.append({"what": label, "seconds": _seconds(statement, repeats)})
    present = [name for name in HANDLERS if (ROOT / "functions" / name / "handler.py").exists()]
    for name in present:
        rows.append(
            {"what": f"functions.{name}.handler", "seconds": _seconds(f"import functions.{name}.handler", repeats)}
        )
    for row in rows:
        print(f"  cold import {row['what']:<34}: {row['seconds'] * 1000:7.0f} ms")
    heaviest = heaviest_imports("functions.poller.handler") if "poller" in present else []
    return {"repeats": repeats, "rows": rows, "heaviest_poller_imports": heaviest, "python": sys.version.split()[0]}
