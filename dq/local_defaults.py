"""What `dq local` serves unless told otherwise: apart from the server, so that the command line can show them in
its help without importing the server and the handlers it runs (every other `dq` command would pay for that)."""

from __future__ import annotations

from typing import Final

HOST: Final = "127.0.0.1"
DEFAULT_PORT: Final = 8080
# The embedded DynamoDB's port for `dq local`: stable, so that the endpoint a user exported stays right after a
# restart. The server class itself takes a free port unless told (tests run several side by side).
DEFAULT_DYNAMODB_PORT: Final = 8081
DEFAULT_TABLE: Final = "dynamo-queue-local"
DEFAULT_SWEEP_INTERVAL: Final = 60.0
# Where `dq local` keeps its data unless told: beside the project it serves (the checkout, for `make local`), so
# that two projects do not share queues, and where `ls -a` shows it.
DEFAULT_DATA_DIR: Final = ".dq-local"
