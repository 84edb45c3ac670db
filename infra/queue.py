"""`DynamoQueue`: the whole queue (table, layer, functions, API, schedule, monitoring) as one construct."""

from __future__ import annotations

from collections.abc import Iterable, Mapping

import aws_cdk as cdk
from aws_cdk import aws_apigateway as apigateway
from aws_cdk import aws_dynamodb as dynamodb
from aws_cdk import aws_iam as iam
from aws_cdk import aws_lambda as lambda_
from aws_cdk import aws_s3 as s3
from aws_cdk import aws_scheduler as scheduler
from constructs import Construct
from queue_api.operations import ROUTES, Access
from sqs_api import routes as sqs_routes

from infra.api import build_api
from infra.bodies_bucket import build_bodies_bucket
from infra.consumers import PushConsumer, PushConsumers
from infra.functions import ARCHITECTURES, RUNTIME, build_functions
from infra.layer import build_layer
from infra.monitoring import Monitoring
from infra.permissions import check_name, grant_tenant_bucket_access, grant_tenant_table_access
from infra.props import DynamoQueueProps
from infra.schedule import build_sweeper_schedule
from infra.table import build_table


class DynamoQueue(Construct):
    """A multi-tenant message queue on one DynamoDB table, reachable by HTTP, Lambda invoke and the layer.

    The grant methods are how other principals get in: HTTP callers get `execute-api:Invoke` on exactly the
    routes (and, for a tenant, the `(queue, client)` paths) they need, a queue's own routes only through a grant
    that covers all of its clients; Lambda callers get `lambda:InvokeFunction` on one function; code using the
    core library directly gets table actions confined by `dynamodb:LeadingKeys` to one sub-queue.
    """

    def __init__(self, scope: Construct, construct_id: str, *, props: DynamoQueueProps | None = None) -> None:
        super().__init__(scope, construct_id)
        self.props = props or DynamoQueueProps()
        self.table: dynamodb.Table = build_table(self, self.props)
        self.bodies_bucket: s3.Bucket = build_bodies_bucket(self, self.props)
        self.layer: lambda_.LayerVersion = build_layer(
            self,
            runtime=RUNTIME,
            architecture=ARCHITECTURES[self.props.architecture],
            install_dependencies=self.props.layer_dependencies,
        )
        self.functions: Mapping[str, lambda_.Function] = build_functions(
            self, table=self.table, layer=self.layer, props=self.props, bucket=self.bodies_bucket
        )
        self.api: apigateway.RestApi = build_api(self, functions=self.functions, props=self.props)
        self.sweeper_schedule: scheduler.Schedule = build_sweeper_schedule(self, sweeper=self.sweeper, props=self.props)
        self.monitoring = Monitoring(
            self, "Monitoring", table=self.table, functions=self.functions, api=self.api, props=self.props
        )

        self.push: PushConsumers | None = None

    def add_consumer(
        self,
        fn: lambda_.IFunction,
        *,
        queue: str,
        client: str,
        batch_size: int = 10,
        max_batching_window: cdk.Duration | None = None,
        max_concurrency: int = 2,
        visibility_timeout: cdk.Duration | None = None,
        function_timeout: cdk.Duration | None = None,
    ) -> PushConsumer:
        """`fn` gets `(queue, client)`'s messages as SQS events and answers `batchItemFailures`, as behind an
        SQS event source mapping (see `infra.consumers`). `visibility_timeout` (default: the batching window plus
        the function's timeout plus 30 s) may not be shorter than that; `function_timeout` is needed only for an
        imported function, whose timeout the construct cannot read. `fn` is granted nothing on the table."""
        if self.push is None:
            self.push = PushConsumers(
                self,
                "Push",
                table=self.table,
                layer=self.layer,
                sweeper=self.sweeper,
                monitoring=self.monitoring,
                props=self.props,
                bucket=self.bodies_bucket,
            )
        return self.push.add(
            fn,
            queue=queue,
            client=client,
            batch_size=batch_size,
            max_batching_window=max_batching_window,
            max_concurrency=max_concurrency,
            visibility_timeout=visibility_timeout,
            function_timeout=function_timeout,
        )

    @property
    def producer(self) -> lambda_.Function:
        return self.functions["producer"]

    @property
    def poller(self) -> lambda_.Function:
        return self.functions["poller"]

    @property
    def dlq_redriver(self) -> lambda_.Function:
        return self.functions["dlq_redriver"]

    @property
    def sqs(self) -> lambda_.Function:
        return self.functions["sqs"]

    @property
    def sweeper(self) -> lambda_.Function:
        return self.functions["visibility_sweeper"]

    def grant_send(self, grantee: iam.IGrantable, queue: str = "*", client: str = "*") -> iam.Grant:
        """HTTP: send (one or a batch) to `(queue, client)`."""
        return self._grant_routes(grantee, {Access.SEND}, queue, client)

    def grant_consume(self, grantee: iam.IGrantable, queue: str = "*", client: str = "*") -> iam.Grant:
        """HTTP: receive, delete, change visibility, release, peek, get, cancel and stats on `(queue, client)`."""
        return self._grant_routes(grantee, {Access.CONSUME}, queue, client)

    def grant_consume_all(self, grantee: iam.IGrantable, queue: str = "*") -> iam.Grant:
        """HTTP: a worker pool for every client of `queue`: the queue-wide receive, delete, visibility and release
        (`/queues/{q}/receive`, ...), and the consume routes of each client (whose handles the queue-wide routes
        also settle). No admin route: no purge, no DLQ, no settings."""
        return self._grant_routes(grantee, {Access.CONSUME}, queue, "*")

    def grant_admin(self, grantee: iam.IGrantable, queue: str = "*", client: str = "*") -> iam.Grant:
        """HTTP: every route of `(queue, client)`; with `client="*"`, that is `grant_queue_admin(grantee, queue)`.

        Naming a client narrows the grant to that client's routes (`/queues/{q}/clients/{c}/...`: send, consume,
        purge and the DLQ). The queue's own routes act on, or tell about, every client of the queue (its
        settings, its deletion, its client list, and its description, whose figures are summed over all
        clients), so one tenant's administrator gets none of them.
        """
        return self._grant_routes(grantee, set(Access), queue, client)

    def grant_replay(self, grantee: iam.IGrantable, queue: str = "*", client: str = "*") -> iam.Grant:
        """HTTP: replays of the archive of `(queue, client)` into it (start, run, status, cancel): an operator's
        action, which writes new messages, apart from reading the archive (`grant_consume`, the peek grant) and
        from the other admin routes (every admin grant includes it)."""
        return self._grant_routes(grantee, {Access.REPLAY}, queue, client)

    def grant_queue_admin(self, grantee: iam.IGrantable, queue: str = "*") -> iam.Grant:
        """HTTP: every route of `queue`: create, describe, change and delete it, list its clients, and every
        route of each of its clients.

        Listing all queues is a route of no queue: it is granted only with `queue="*"`, so an administrator
        of one queue does not learn the names of the others.
        """
        return self._grant_routes(grantee, set(Access), queue, "*")

    def grant_sqs(self, grantee: iam.IGrantable, client: str = "*") -> iam.Grant:
        """HTTP: Amazon SQS's protocol for `client`'s sub-queues (`POST /sqs/{client}`; the client `default` and
        `*` also `POST /`): messages, DLQ reads and redrives, purge, and finding and describing queues. None of
        these routes creates, changes, tags or deletes a queue (which would act for all its clients), whatever
        the client, `default` and `*` included: that is `grant_sqs_admin`'s route alone."""
        check_name("client", client)
        stage = self.api.deployment_stage.stage_name
        arns = [self.api.arn_for_execute_api(sqs_routes.METHOD, f"/sqs/{client}", stage)]
        if client in ("*", "default"):
            arns.append(self.api.arn_for_execute_api(sqs_routes.METHOD, sqs_routes.ROOT, stage))
        return iam.Grant.add_to_principal(grantee=grantee, actions=["execute-api:Invoke"], resource_arns=arns)

    def grant_sqs_admin(self, grantee: iam.IGrantable) -> iam.Grant:
        """HTTP: Amazon SQS's queue administration (`POST /sqs-admin`): create, describe, change, tag, list and
        delete every queue, for all of its clients. It reaches no client's messages."""
        stage = self.api.deployment_stage.stage_name
        arn = self.api.arn_for_execute_api(sqs_routes.METHOD, sqs_routes.ADMIN_ROUTE, stage)
        return iam.Grant.add_to_principal(grantee=grantee, actions=["execute-api:Invoke"], resource_arns=[arn])

    def grant_invoke_producer(self, grantee: iam.IGrantable) -> iam.Grant:
        return self.producer.grant_invoke(grantee)

    def grant_invoke_poller(self, grantee: iam.IGrantable) -> iam.Grant:
        return self.poller.grant_invoke(grantee)

    def grant_invoke_dlq_redriver(self, grantee: iam.IGrantable) -> iam.Grant:
        return self.dlq_redriver.grant_invoke(grantee)

    def grant_invoke_sweeper(self, grantee: iam.IGrantable) -> iam.Grant:
        return self.sweeper.grant_invoke(grantee)

    def grant_library_access(self, grantee: iam.IGrantable, queue: str, client: str) -> list[iam.Grant]:
        """Direct table access for a function that attaches `layer` and works on one sub-queue, and access to
        that sub-queue's offloaded bodies (objects under `{queue}/{client}/` in `bodies_bucket`; give the
        function `QUEUE_BUCKET` = `bodies_bucket.bucket_name`).

        Lambda invoke carries no caller identity to the functions, so it cannot be confined to a tenant;
        this grant can, which makes it the way to give a tenant's own function its sub-queue and nothing else.
        """
        grants = grant_tenant_table_access(grantee, self.table, queue, client)
        return [*grants, grant_tenant_bucket_access(grantee, self.bodies_bucket, queue, client)]

    def execute_api_arns(self, access: Iterable[Access], queue: str = "*", client: str = "*") -> list[str]:
        """The `execute-api` ARNs of the routes of `access`, with `{q}`, `{c}` filled in and `{id}` open.

        A route whose path does not name the queue (listing queues) or the client (a queue's own routes) is
        reached only by a grant that leaves that name open: a grant narrowed to one queue or one client never
        reaches a route that acts beyond it.
        """
        check_name("queue", queue)
        check_name("client", client)
        wanted = set(access)
        stage = self.api.deployment_stage.stage_name
        arns: list[str] = []
        for route in ROUTES:
            if route.access is not Access.DESCRIBE and (
                route.access not in wanted or not _route_within(route.path, queue, client)
            ):
                continue
            path = route.path_for(q=queue, c=client, id="*")
            arn = self.api.arn_for_execute_api(route.method, path, stage)
            if arn not in arns:
                arns.append(arn)
        return arns

    def _grant_routes(self, grantee: iam.IGrantable, access: set[Access], queue: str, client: str) -> iam.Grant:
        return iam.Grant.add_to_principal(
            grantee=grantee,
            actions=["execute-api:Invoke"],
            resource_arns=self.execute_api_arns(access, queue, client),
        )


def _route_within(path: str, queue: str, client: str) -> bool:
    """Whether a route stays inside what a grant names: every name the grant narrows is a parameter of its path."""
    return (queue == "*" or "{q}" in path) and (client == "*" or "{c}" in path)
