"""CDK entry point: `cdk synth` / `cdk deploy` (or `make synth` / `make deploy`) run this file.

Every synth is checked against the AWS Solutions rules of cdk-nag: an unacknowledged finding stops it.
Deployment settings come from context, e.g. `cdk deploy -c dynamo-queue:alarm_email=ops@example.com`.
"""

from __future__ import annotations

from typing import Final

import aws_cdk as cdk
from cdk_nag import AwsSolutionsChecks
from queue_core.version import __version__

from infra.props import DynamoQueueProps
from infra.stack import DynamoQueueStack

STACK_NAME: Final = "DynamoQueue"


def build_app(app: cdk.App | None = None) -> tuple[cdk.App, DynamoQueueStack]:
    """The app with its one stack and the compliance checks; tests call this with their own `cdk.App`."""
    app = app or cdk.App()
    stack = DynamoQueueStack(
        app,
        STACK_NAME,
        props=DynamoQueueProps.from_context(app.node),
        description=f"dynamo-queue {__version__}: a serverless, multi-tenant message queue on Amazon DynamoDB",
    )
    cdk.Validations.of(app).add_plugins(AwsSolutionsChecks(app))
    return app, stack


if __name__ == "__main__":
    build_app()[0].synth()
