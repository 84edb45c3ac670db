"""Amazon SQS's own wire protocol (AWS JSON 1.0, as botocore's SQS service model describes it) over the queue core.

An adapter beside `queue_api`: `protocol.answer()` takes one HTTP request (target header, JSON body) and the
endpoint it came to, and returns the HTTP answer. The endpoint names the client whose sub-queues the requests act
on: `POST /` is the client `default`, `POST /sqs/{client}` that client; `POST /sqs-admin` administers queues
and reaches no client's messages. Queue URLs are `{endpoint}/{account}/{queue}`; a URL minted for another client's
endpoint is refused.
"""
