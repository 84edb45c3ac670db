"""The package's public names are loaded on first use; each must be the same object whatever was imported first."""

from __future__ import annotations

import os
import subprocess
import sys

import queue_core


def test_sqs_client_is_the_function_after_its_module_was_imported() -> None:
    """`queue_core.sqs_client` names both a submodule and the helper the package exports. Importing the submodule
    first, as the README's `from queue_core.sqs_client import sign_for_execute_api` does, binds the package attribute
    to the module, so a lazy `__getattr__` is never asked: `queue_core.sqs_client(api_url)` must still be the
    function."""
    program = (
        "from queue_core.sqs_client import sign_for_execute_api\n"
        "import queue_core\n"
        "from queue_core import sqs_client\n"
        "print(callable(queue_core.sqs_client), callable(sqs_client))\n"
    )
    package_root = os.path.dirname(os.path.dirname(queue_core.__file__))  # this checkout's, not an installed one
    environment = {**os.environ, "PYTHONPATH": package_root}
    command = [sys.executable, "-c", program]
    done = subprocess.run(command, capture_output=True, text=True, check=True, env=environment)
    assert done.stdout.split() == ["True", "True"]
