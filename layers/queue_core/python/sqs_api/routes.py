"""Where the SQS protocol is served: the function's name and its two routes, for the stack and the local server.

Reading this module imports nothing else of the adapter."""

from __future__ import annotations

from typing import Final

FUNCTION: Final = "sqs"
METHOD: Final = "POST"
ROOT: Final = "/"
CLIENT_ROUTE: Final = "/sqs/{client}"
RESOURCES: Final = (ROOT, CLIENT_ROUTE)
