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


def test_a_submodule_is_an_attribute_of_the_package_after_a_plain_import() -> None:
    """`import queue_core` then `queue_core.shard_marks`: the package used to import every submodule, and code that
    reached one so must keep working now that it loads them on first use; a name that is neither stays an error."""
    program = (
        "import queue_core\n"
        "print(queue_core.shard_marks.__name__, queue_core.sweep.__name__)\n"
        "print(hasattr(queue_core, 'no_such_module'), hasattr(queue_core, '_private'))\n"
    )
    package_root = os.path.dirname(os.path.dirname(queue_core.__file__))
    environment = {**os.environ, "PYTHONPATH": package_root}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, check=True, env=environment)
    assert done.stdout.split() == ["queue_core.shard_marks", "queue_core.sweep", "False", "False"]


def test_a_name_that_is_no_identifier_is_an_attribute_error_and_imports_nothing() -> None:
    """`getattr(queue_core, name, default)` and `hasattr` expect AttributeError for a missing name. A dotted name is
    not a submodule of the package: looking it up as one would import its first part (`queue_core.sweep` for
    `sweep.x`) and raise ModuleNotFoundError, or hand back a module of a subpackage as if the package had it."""
    program = (
        "import sys, queue_core\n"
        "names = ['.', 'a.b', 'sweep.x', '..sweep', 'store.shard_marks']\n"
        "print([getattr(queue_core, name, None) for name in names])\n"
        "print([hasattr(queue_core, name) for name in names])\n"
        "print('queue_core.sweep' in sys.modules, 'queue_core.store' in sys.modules)\n"
    )
    package_root = os.path.dirname(os.path.dirname(queue_core.__file__))
    environment = {**os.environ, "PYTHONPATH": package_root}
    done = subprocess.run([sys.executable, "-c", program], capture_output=True, text=True, env=environment)
    assert done.returncode == 0, done.stderr
    assert done.stdout.splitlines() == [
        "[None, None, None, None, None]",
        "[False, False, False, False, False]",
        "False False",
    ]
