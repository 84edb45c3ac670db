"""Where the deployed code lives in the repository, relative to this file so the app runs from any folder."""

from __future__ import annotations

from pathlib import Path
from typing import Final

REPO_ROOT: Final = Path(__file__).resolve().parent.parent
FUNCTIONS_DIR: Final = REPO_ROOT / "functions"
LAYER_DIR: Final = REPO_ROOT / "layers"
# The layer's source folder: every package in it (queue_core, and queue_api that the handlers share) is
# deployed in the layer and importable by the functions.
CORE_SOURCE_ROOT: Final = LAYER_DIR / "queue_core" / "python"
LAYER_REQUIREMENTS: Final = LAYER_DIR / "requirements.txt"
# Third-party wheels for the layer are installed here once per pinned set, so a fresh cdk.out (or a test's
# temporary one) does not reinstall them.
LAYER_BUILD_DIR: Final = REPO_ROOT / ".layer-build"
