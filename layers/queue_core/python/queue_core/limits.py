"""Limits and defaults, in one place. Ranges follow SQS where SQS has one."""

from __future__ import annotations

from typing import Final

# SQS's maximum message size, 1 MiB: the default and the largest `max_message_bytes`. Every path carries it: the
# library (a body past what an item holds goes to S3), API Gateway (10 MB), a synchronous Lambda invoke (6 MB each
# way; a receive answers what fits, see `queue_api.payloads`). An asynchronous invoke takes 1 MB in all.
MAX_BODY_BYTES: Final = 1024 * 1024
# ... as long as its JSON carries it: an answer through API Gateway holds a body's JSON escaped twice, up to 7
# bytes a character for control characters (U+0000-U+001F but tab, line feed, carriage return, backspace and form
# feed). A body whose twice-escaped JSON passes this is refused, so that one message with its largest attributes
# (64 KiB, escaped as badly) still fits a 6 MB Lambda answer. No other text comes near: 1 MiB of any other
# characters escapes to at most 4.2 MB (backslashes), and SQS's protocol refuses control characters outright.
MAX_ANSWERED_BODY_BYTES: Final = 5_000_000
# A queue's `max_message_bytes` (SQS's MaximumMessageSize) lies in this range; its default is MAX_BODY_BYTES.
MIN_MESSAGE_BYTES: Final = 1024
MAX_ATTRIBUTES: Final = 10
MAX_ATTRIBUTE_NAME: Final = 256
# A typed attribute's data type: `String`, `Number` or `Binary`, optionally with a custom suffix (`Number.float`).
MAX_ATTRIBUTE_TYPE: Final = 256
# SQS's Number: up to 38 significant digits, magnitude from 10^-128 to 10^126.
MAX_NUMBER_DIGITS: Final = 38
MIN_NUMBER_EXPONENT: Final = -128
MAX_NUMBER_EXPONENT: Final = 126
# Attribute names and values together. With a body's pointer, the item still fits DynamoDB's 400 KB with room
# (ITEM_HEADROOM_BYTES) for everything the queue writes into it later: a claim, a DLQ move, a redrive.
MAX_ATTRIBUTES_BYTES: Final = 64 * 1024
# The longest body (in characters) read as an SQS Extended Client pointer (`bodies.is_extended_client_pointer`):
# its JSON with a bucket name and a 1,024-byte key escaped at worst (6 characters a byte). Anything longer is an
# ordinary body, stored as its size needs.
MAX_POINTER_BYTES: Final = 8 * 1024
# DynamoDB refuses an item over 400 KB (409,600 bytes). The embedded DynamoDB of `make local`, `dq local` and the
# tests (moto) refuses one over 405,000 bytes as it counts them: names and values in UTF-8 as DynamoDB does, but a
# number as its decimal digits (DynamoDB: about one byte per two), and an attribute an update replaces twice
# while the update runs. A message item must fit both: the smaller limit, less ITEM_HEADROOM_BYTES for what the
# queue writes into the item after its send, as the larger count of the two counts it. At most: a claim's token,
# flag, first-receive time and receive count (4 digits), a release's id beside a later claim's token, moto's
# second count of the index key an update replaces, and for a DLQ copy its time and a FIFO key that carries the
# group id in base64 (at most 45 bytes more than the live key): under 400 bytes, measured at the edge by
# tests/core/test_item_limits.py.
DYNAMODB_ITEM_BYTES: Final = 400 * 1024
EMBEDDED_ITEM_BYTES: Final = 405_000
MAX_ITEM_BYTES: Final = min(DYNAMODB_ITEM_BYTES, EMBEDDED_ITEM_BYTES)
ITEM_HEADROOM_BYTES: Final = 4 * 1024
# Bodies (UTF-8) from this size on are compressed when that lowers the item's write units: below it, an item of
# a body and the queue's own attributes stays within one unit whatever compression does.
COMPRESS_MIN_BYTES: Final = 512
# A stored body (compressed or not) above this many bytes goes to S3 when a bucket is configured, the item
# keeping a pointer. A KB in the item costs a write unit three times in a message's life (send, claim, delete): an
# S3 PUT and GET cost as much as about 3 KB of it, so past a few KB the object is cheaper (`make bench`). The
# threshold sits above the break-even so that the smaller bodies keep one round trip per step. Bodies whose item
# would not fit in DynamoDB go to S3 whatever this says.
DEFAULT_OFFLOAD_BYTES: Final = 8 * 1024
# What a claim, a release and a DLQ move add to an item besides the message's own attributes (tokens, times,
# counts, index keys): counted when deciding whether compression lowers the units of those writes too.
CLAIM_BYTES: Final = 160
MAX_BATCH: Final = 25
# The longest an acknowledged message is kept in a queue's archive (`archive_days`; 0: no archive).
MAX_ARCHIVE_DAYS: Final = 90
# A replay of the archive (`replays`): the most message ids it may name, its fastest rate (new messages a second)
# and the longest a single run of it may go on for (a call of the API's, inside API Gateway's 29 s).
MAX_REPLAY_IDS: Final = 1000
MAX_REPLAY_RATE: Final = 1000
MAX_REPLAY_RUN_SECONDS: Final = 20
MAX_RECEIVE: Final = 10
MAX_VISIBILITY_SECONDS: Final = 43_200
MAX_WAIT_SECONDS: Final = 20
# A queue's default delay; a send's own delay (or `deliver_at`) may reach the queue's retention less
# MIN_DELIVERY_WINDOW_SECONDS.
MAX_DELAY_SECONDS: Final = 900
# Every delivery time a send (or a queue's default delay) may ask for leaves the message this long between the
# time it becomes visible and its expiry: a delay or `deliver_at` later than the retention less this is refused.
MIN_DELIVERY_WINDOW_SECONDS: Final = 60
MAX_PRIORITY: Final = 9
MAX_GROUP_ID: Final = 128
MAX_DEDUP_ID: Final = 128
# A message's life writes its shard's index key four times, and a key takes 1,000 WU/s: 512 shards carry one client
# up to about 128,000 msg/s (a 50,000 msg/s load at 39 % of each key, inside the automatic count's hysteresis).
MAX_SHARDS: Final = 512
# Earlier shard layouts a queue keeps while items may live under them; a change of `shards` past it is refused.
MAX_SHARD_LAYOUTS: Final = 16
MAX_RECEIVE_COUNT: Final = 1000
MIN_RETENTION_SECONDS: Final = 60
MAX_RETENTION_SECONDS: Final = 1_209_600
# How long the bucket of offloaded bodies keeps an object after its last write (its lifecycle rule): a message's
# longest life in its queue, then as long again in the DLQ, and a day's margin for the sweep and clocks.
DAY_SECONDS: Final = 86_400
OBJECT_LIFETIME_SECONDS: Final = 2 * MAX_RETENTION_SECONDS + DAY_SECONDS
MAX_DEDUP_WINDOW_SECONDS: Final = 86_400
MAX_PEEK: Final = 100
# How long a message that can be neither delivered nor moved to the DLQ (its copy too large) stays out of sight
# before a receive or the sweep tries the move again: a FIFO head holds its group that long, a standard message
# leaves the shard's front instead of costing every receive that meets it a refused transaction.
STUCK_RETRY_SECONDS: Final = 300
# The most messages one redrive (or one move of dead letters) counts out when asked for a number of them.
MAX_REDRIVE: Final = 1_000_000
# One browse call (`SubQueue.browse`) reads at most this many items in at most this many Queries, whatever its
# filters leave: a page may come back short (even empty) with a cursor to go on from.
BROWSE_READ_ITEMS: Final = 1_000
BROWSE_QUERIES: Final = 50
# ... and answers at most this many bytes of messages, as an answer through API Gateway and Lambda weighs them (a
# first message always goes): a page of 100 bodies of 1 MiB could not leave a 6 MB Lambda answer.
BROWSE_ANSWER_BYTES: Final = MAX_ANSWERED_BODY_BYTES
# Queue tags, as SQS allows them.
MAX_TAGS: Final = 50
MAX_TAG_KEY: Final = 128
MAX_TAG_VALUE: Final = 256
# DynamoDB's limit of actions in one TransactWriteItems call: a transactional send or ack shares it with the
# caller's own items.
MAX_TRANSACTION_ITEMS: Final = 100

DEFAULT_VISIBILITY_SECONDS: Final = 30
DEFAULT_MAX_RECEIVE_COUNT: Final = 5
DEFAULT_RETENTION_SECONDS: Final = 345_600
DEFAULT_DELAY_SECONDS: Final = 0
DEFAULT_DEDUP_WINDOW_SECONDS: Final = 300

# Release without an explicit delay: randomized exponential backoff from the receive count.
BACKOFF_BASE_SECONDS: Final = 1.0
BACKOFF_MAX_SECONDS: Final = 900

# Registry and settings are cached this long in each process.
SETTINGS_CACHE_SECONDS: Final = 10.0

# Every process holds a queue's changed settings within `SETTINGS_SPREAD_SECONDS` of the change, and every write
# built from the older ones has landed by then: FIFO groups are placed by a new count (`placement_from`), the ready
# markers are trusted (`markers_from`) and a raised retention applies (`retention_from`) only from then on. It is
# the sum of bounds the core enforces (`Store.sent_by`) and two it assumes:
# - a change of the settings is sent, each of the SDK's attempts included, within `SETTINGS_WRITE_GRACE_SECONDS`
#   of the time it counts from, or not at all;
# - a process serves settings at most `SETTINGS_CACHE_SECONDS` after the consistent read that gave them was sent;
# - a write built from them (a send) is sent, each attempt included, within `SEND_GRACE_SECONDS` after that, or
#   not at all: it is built again from settings read afresh;
# - an attempt sent is applied by DynamoDB within `LANDING_SECONDS`, or never: assumed, not enforced (DynamoDB
#   answers in milliseconds; this allows for its slowest seconds); twice, for the change and for the send;
# - those times are the changing process's clock (`placement_from` is `now` plus the spread), and each process
#   compares them with its own: one whose clock runs ahead acts that much sooner, so the spread allows for
#   `CLOCK_SKEW_SECONDS` as well.
# 30 s in all: before the bounds were enforced it was twice the cache plus 20 s.
SETTINGS_WRITE_GRACE_SECONDS: Final = 2.5
SEND_GRACE_SECONDS: Final = 2.5
LANDING_SECONDS: Final = 5.0
# How far apart the clocks of two processes may be (NTP-synchronised hosts; Lambda is).
CLOCK_SKEW_SECONDS: Final = 5
SETTINGS_SPREAD_SECONDS: Final = (
    SETTINGS_WRITE_GRACE_SECONDS
    + SETTINGS_CACHE_SECONDS
    + SEND_GRACE_SECONDS
    + 2 * LANDING_SECONDS
    + CLOCK_SKEW_SECONDS
)

# How far the index (filled asynchronously: usually well under a second, no bound promised) is taken to lag
# behind the table at most, wherever a conclusion drawn from it must not miss a recent write: a drain's look
# after dropping a ready marker put this recently, and the list of a queue's clients when the sweep drops a
# FIFO shard layout. Past it, such a write is assumed to show (design.md, "What rests on the index").
INDEX_LAG_GRACE_SECONDS: Final = 10

# stats() reads at most this many index entries per figure and shard, so its cost stays bounded however deep
# the queue is; beyond it the figure is a lower bound and `approximate` is set.
STATS_SCAN_LIMIT: Final = 10_000

# Dedup items spread over this many partitions per sub-queue, independent of `shards`, so that resharding a
# live queue keeps every dedup window intact.
DEDUP_BUCKETS: Final = 16
