"""The CDK side of the queue: a reusable `DynamoQueue` construct and the stack that deploys it.

The construct reads the table's keys and index from `queue_core.table`, so the core library and the deployed
table can never disagree. The core lives in the layer's source folder, which is put on `sys.path` here, once,
for every module of this package.
"""

from __future__ import annotations

import sys

from infra.paths import CORE_SOURCE_ROOT

if str(CORE_SOURCE_ROOT) not in sys.path:
    sys.path.insert(0, str(CORE_SOURCE_ROOT))
