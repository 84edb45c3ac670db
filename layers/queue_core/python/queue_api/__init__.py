"""The HTTP and invoke front of the queue: request and answer models, routes, error mapping, observability.

It ships in the layer next to `queue_core` so that every function's handler can import it, but it holds no queue
logic: it parses, calls `queue_core`, and shapes the answer. Importing this package costs nothing; each module
imports only what it needs.
"""
