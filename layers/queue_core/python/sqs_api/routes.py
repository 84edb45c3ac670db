"""Where the SQS protocol is served: the function's name and its routes, for the stack and the local server.

Reading this module imports nothing else of the adapter."""

from __future__ import annotations

from typing import Final

FUNCTION: Final = "sqs"
METHOD: Final = "POST"
ROOT: Final = "/"
CLIENT_ROUTE: Final = "/sqs/{client}"
# Queue administration (create, change, tag, delete): a route of its own, so that IAM alone tells who may
# administer queues from who may use them; no client's route reaches it.
ADMIN_ROUTE: Final = "/sqs-admin"
RESOURCES: Final = (ROOT, CLIENT_ROUTE, ADMIN_ROUTE)
