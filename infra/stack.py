"""The deployable stack: one `DynamoQueue` and the outputs a client needs to reach it."""

from __future__ import annotations

from typing import Any

import aws_cdk as cdk
from constructs import Construct

from infra.consumers import consumer_arguments, consumers_from_context
from infra.props import DynamoQueueProps
from infra.queue import DynamoQueue

OUTPUT_FUNCTIONS = {
    "producer": "ProducerFunctionArn",
    "poller": "PollerFunctionArn",
    "dlq_redriver": "DlqRedriverFunctionArn",
    "visibility_sweeper": "VisibilitySweeperFunctionArn",
}


class DynamoQueueStack(cdk.Stack):
    """Outputs: the API URL for `dq --endpoint`, the table for `dq --table`, the layer and function ARNs."""

    def __init__(
        self, scope: Construct, construct_id: str, *, props: DynamoQueueProps | None = None, **kwargs: Any
    ) -> None:
        super().__init__(scope, construct_id, **kwargs)
        self.queue = DynamoQueue(self, "Queue", props=props)
        cdk.CfnOutput(self, "ApiUrl", value=self.queue.api.url, description="Base URL of the REST API")
        cdk.CfnOutput(self, "TableName", value=self.queue.table.table_name, description="The queue table")
        cdk.CfnOutput(
            self, "BodiesBucket", value=self.queue.bodies_bucket.bucket_name, description="Offloaded message bodies"
        )
        cdk.CfnOutput(self, "LayerArn", value=self.queue.layer.layer_version_arn, description="The queue_core layer")
        for name, output_id in OUTPUT_FUNCTIONS.items():
            cdk.CfnOutput(
                self, output_id, value=self.queue.functions[name].function_arn, description=f"The {name} function"
            )
        for index, entry in enumerate(consumers_from_context(self.node)):
            self.queue.add_consumer(**consumer_arguments(self, index, entry))
        if self.queue.push is not None:
            cdk.CfnOutput(
                self,
                "DispatcherFunctionArn",
                value=self.queue.push.dispatcher.function_arn,
                description="The push dispatcher",
            )
