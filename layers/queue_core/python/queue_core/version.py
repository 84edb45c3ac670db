"""The release's one version number: the package's (pyproject.toml reads it from here), `dq --version`'s, the
layer's and the stack's descriptions. The table layout this release writes is `layout.CURRENT_LAYOUT`."""

from __future__ import annotations

__version__ = "0.2.0"
