"""A queue created without `shards` sizes its shard count by its load: it grows when its busiest shard key nears
DynamoDB's per-key limit or is throttled, gives shards back after a quiet period, and loses nothing either way."""

from __future__ import annotations

import pytest
from queue_core import QueueClient, ValidationError, autoshard

from tests.conftest import TABLE, FakeClock
from tests.core.answers import Refused, refused

BODY = "x" * 600  # with its keys and attributes under 1 KB: four write units of its shard's index key per life


def _send(queue, count: int, prefix: str = "m") -> list[str]:
    bodies = [f"{prefix}{i}:{BODY}" for i in range(count)]
    for start in range(0, count, 25):
        result = queue.send_batch([{"body": body} for body in bodies[start : start + 25]])
        assert not result.failed
    return bodies


def _drain(queue) -> list[str]:
    got_all = []
    while got := queue.receive(max_messages=10):
        got_all += [m.body for m in got]
        queue.delete_batch([m.receipt_handle for m in got])
    return got_all


def _load(queue, clock: FakeClock, per_second: int) -> list[str]:
    """`per_second` messages a second for one report window, then one more send that reports it."""
    bodies = _send(queue, per_second * autoshard.FLUSH_SECONDS)
    clock.advance(autoshard.FLUSH_SECONDS)
    return bodies + _send(queue, 1, prefix="last")


def test_a_queue_without_shards_is_automatic_and_a_number_is_fixed(client: QueueClient) -> None:
    auto = client.create_queue("auto")
    assert (auto.shards, auto.auto_shards, auto.min_shards, auto.max_shards) == (1, True, 1, 512)
    assert auto.to_dict()["auto_shards"] is True and "shards_changed_at" not in auto.to_dict()
    bounded = client.create_queue("bounded", shards="auto", min_shards=2, max_shards=8)
    assert (bounded.shards, bounded.auto_shards, bounded.min_shards, bounded.max_shards) == (2, True, 2, 8)
    fixed = client.create_queue("fixed", shards=4)
    assert (fixed.shards, fixed.auto_shards) == (4, False)
    assert client.reshard_automatically("fixed", 8) is None and client.get_queue("fixed").shards == 4


@pytest.mark.parametrize(
    ("settings", "message"),
    [
        ({"min_shards": 0}, "min_shards must be from 1 to 512"),
        ({"max_shards": 513}, "max_shards must be from 1 to 512"),
        ({"min_shards": 8, "max_shards": 4}, "min_shards (8) must be at most max_shards (4)"),
        ({"shards": 4, "max_shards": 8}, 'max_shards bound automatic shards: give shards "auto"'),
        ({"shards": "many"}, 'shards must be "auto" or an integer from 1 to 512'),
        ({"shards": 0}, "shards must be from 1 to 512"),
    ],
)
def test_bad_shard_settings_are_refused_and_create_nothing(client: QueueClient, settings, message: str) -> None:
    with pytest.raises(ValidationError, match=message.replace("(", r"\(").replace(")", r"\)")):
        client.create_queue("bad", **settings)
    assert [q.name for q in client.list_queues()] == []


def test_switching_between_fixed_and_automatic(client: QueueClient) -> None:
    client.create_queue("switch", shards=8)
    switched = client.update_queue("switch", shards="auto", max_shards=4)
    assert (switched.auto_shards, switched.shards, switched.max_shards) == (True, 4, 4)
    with pytest.raises(ValidationError, match="min_shards"):
        client.update_queue("switch", shards=2, min_shards=1)
    fixed = client.update_queue("switch", shards=2)
    assert (fixed.auto_shards, fixed.shards) == (False, 2)
    with pytest.raises(ValidationError, match="bound automatic shards"):
        client.update_queue("switch", max_shards=8)


def test_load_grows_the_count_quiet_shrinks_it_and_nothing_is_lost(
    client: QueueClient, clock: FakeClock, monkeypatch: pytest.MonkeyPatch
) -> None:
    # DynamoDB's limit per key scaled down twenty times, and the load with it, so that moto carries it quickly.
    monkeypatch.setattr(autoshard, "KEY_WRITE_UNITS", 50)
    created = client.create_queue("busy")
    queue = client.queue("busy", "c")
    assert client.create_queue("busy").shards == created.shards, "creating it again is a no-op"
    sent = _load(queue, clock, 2)  # 8 WU/s: a sixth of a key's limit, no reason to grow
    assert client.sweep().shards == [{"queue": "busy", "shards": 1, "auto": True}]
    sent += _load(queue, clock, 15)  # 60 WU/s on one key: past its limit
    report = client.sweep()
    assert report.shards == [{"queue": "busy", "shards": 8, "auto": True}], "sized for a quarter of the limit"
    assert client.create_queue("busy").shards == 8, "creating it again is still a no-op, at any count"
    sent += _send(queue, 20, prefix="wide")
    clock.advance(autoshard.GROW_COOLDOWN_SECONDS)
    assert client.sweep().shards[0]["shards"] == 8, "the load is gone but not for long: no shrink yet"
    clock.advance(autoshard.QUIET_SECONDS)
    assert client.sweep().shards[0]["shards"] == 1, "quiet for long enough: back to the minimum in one change"
    settings = client.get_queue("busy")
    assert settings.read_shards == 8, "receivers still visit the shards that hold messages"
    clock.advance(120)
    client.sweep()
    assert client.get_queue("busy").read_shards == 8, "nothing is stranded: the old shards still hold messages"
    assert sorted(_drain(queue)) == sorted(sent)
    client.sweep()
    assert client.get_queue("busy").read_shards == 1, "once the old shards are empty, receivers stop visiting them"


def test_each_client_of_a_process_reports_its_own_load(
    client: QueueClient, clock: FakeClock, dynamodb, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Two clients in one process (threads, a worker pool), each carrying a third of a key's limit (scaled down
    # twenty times): together past half of it. One's report must not overwrite the other's.
    monkeypatch.setattr(autoshard, "KEY_WRITE_UNITS", 50)
    client.create_queue("shared")
    queues = [core.queue("shared", "c") for core in (client, QueueClient(TABLE, dynamodb=dynamodb, clock=clock))]
    sent = [body for queue in queues for body in _send(queue, 4 * autoshard.FLUSH_SECONDS)]
    clock.advance(autoshard.FLUSH_SECONDS)
    sent += [body for queue in queues for body in _send(queue, 1, prefix=f"last{id(queue)}")]
    assert client.sweep().shards == [{"queue": "shared", "shards": 4, "auto": True}]
    assert sorted(_drain(queues[0])) == sorted(sent)


def _throttled_sends(client: QueueClient, clock: FakeClock, dynamodb) -> list[str]:
    """Twenty-odd sends in one report window, every one throttled: the messages sent before and after."""
    client.create_queue("hot", max_shards=16)
    queue = client.queue("hot", "c")
    queue.send("warm")
    with refused(dynamodb, Refused("BatchWriteItem", code="ProvisionedThroughputExceededException", message="x")):
        result = queue.send_batch([{"body": "a"}, {"body": "b"}])
        assert [failure["code"] for failure in result.failed] == ["Throttled", "Throttled"]
        assert client.get_queue("hot").shards == 1, "a throttle now and then is no reason to grow"
        for _ in range(autoshard.THROTTLES_PER_MINUTE * autoshard.FLUSH_SECONDS // 60):
            queue.send_batch([{"body": "c"}, {"body": "d"}])
        clock.advance(autoshard.FLUSH_SECONDS)
        queue.send_batch([{"body": "e"}])
    queue.send("next")
    return sorted(_drain(queue))


@pytest.mark.usefixtures("instant_backoff")
def test_a_throttled_sender_grows_the_count_at_once(
    client: QueueClient, clock: FakeClock, dynamodb, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A key's limit scaled down twenty times: the sends below are a third of it, enough to explain the throttles.
    monkeypatch.setattr(autoshard, "KEY_WRITE_UNITS", 50)
    assert _throttled_sends(client, clock, dynamodb) == ["next", "warm"]
    assert client.get_queue("hot").shards == 4, "grown by the throttled sender itself, without a sweep"


@pytest.mark.usefixtures("instant_backoff")
def test_throttles_the_load_does_not_explain_grow_nothing(client: QueueClient, clock: FakeClock, dynamodb) -> None:
    # The same throttles against a key's real limit: the load is under 2 % of it (a table-level quota, say), and
    # more shards would not help.
    assert _throttled_sends(client, clock, dynamodb) == ["next", "warm"]
    assert client.get_queue("hot").shards == 1


def test_automatic_changes_are_fenced_and_kept_as_few_layouts(client: QueueClient, clock: FakeClock) -> None:
    client.create_queue("flap.fifo", max_receive_count=0)
    queue = client.queue("flap.fifo", "c")
    sent = []
    for round_ in range(20):  # more changes than the 16 layouts a queue may keep: never refused
        shards = [1, 2, 4, 64][round_ % 4]
        client.reshard_automatically("flap.fifo", shards)
        body = f"{round_}"
        queue.send(body, group_id=f"g{round_ % 3}")
        sent.append(body)
        clock.advance(1)
    assert len(client.get_queue("flap.fifo").shard_history) <= 4
    assert sorted(_drain(queue), key=int) == sent


def _send_groups(queue, count: int, groups: list[str], prefix: str) -> list[str]:
    """`count` messages in turn over `groups`, 25 a batch."""
    bodies = [f"{prefix}{i}:{BODY}" for i in range(count)]
    for start in range(0, count, 25):
        batch = [
            {"body": body, "group_id": groups[(start + i) % len(groups)]}
            for i, body in enumerate(bodies[start : start + 25])
        ]
        assert not queue.send_batch(batch).failed
    return bodies


def _fifo_load(queue, clock: FakeClock, hot: int, spread: int, prefix: str) -> list[str]:
    """For one report window, `hot` messages a second in group "hot" and `spread` over a hundred other groups, then
    one more send that reports it."""
    seconds = autoshard.FLUSH_SECONDS
    sent = _send_groups(queue, hot * seconds, ["hot"], f"{prefix}h") if hot else []
    sent += _send_groups(queue, spread * seconds, [f"g{i}" for i in range(100)], f"{prefix}s") if spread else []
    clock.advance(seconds)
    return sent + _send_groups(queue, 1, ["hot"], f"{prefix}last")


@pytest.mark.parametrize(
    ("hot", "spread", "shards"),
    [
        (15, 0, 1),  # 60 WU/s in one group: past a key's limit, but that group's own; more shards cannot split it
        (0, 15, 8),  # the same load over a hundred groups: spread as a standard queue's is
        (5, 10, 4),  # mixed: sized on the 40 WU/s the other groups carry, not on the hot group's 20 on top
    ],
)
def test_fifo_grows_only_for_the_load_more_shards_can_spread(
    client: QueueClient, clock: FakeClock, monkeypatch: pytest.MonkeyPatch, hot: int, spread: int, shards: int
) -> None:
    monkeypatch.setattr(autoshard, "KEY_WRITE_UNITS", 50)  # scaled down twenty times, as the load
    client.create_queue("orders.fifo", max_receive_count=0)
    queue = client.queue("orders.fifo", "c")
    sent = []
    for round_ in range(3):  # the same load again once groups are placed by the new count: no staircase either
        sent += _fifo_load(queue, clock, hot, spread, f"r{round_}")
        assert client.sweep().shards == [{"queue": "orders.fifo", "shards": shards, "auto": True}], round_
        clock.advance(3 * autoshard.GROW_COOLDOWN_SECONDS)
    received = _drain(queue)
    assert sorted(received) == sorted(sent)
    in_hot = {body for body in sent if "h" in body.split(":")[0] or "last" in body}
    assert [body for body in received if body in in_hot] == [body for body in sent if body in in_hot], "in order"


def _reports(
    total_wu: float,
    until_s: float,
    seconds: float = 20,
    throttles_per_minute: float = 0,
    processes: int = 1,
    groups: dict[str, float] | None = None,
) -> list[autoshard.Reports]:
    """One client's reports of a steady load (`total_wu` a second in all, `groups` of it by group) carried by
    `processes` processes for `seconds` up to `until_s`: a report a second from each, each standing for a
    hundred quanta (so their sampling error is negligible), half a second before each whole second."""
    samples = []
    for process in range(processes):
        for second in range(int(seconds)):
            at = int((until_s - second - 0.5) * 1000)
            units = total_wu / processes
            samples.append(
                autoshard.Sample(
                    at,
                    units,
                    throttles_per_minute / 60 / processes,
                    {group: wu / processes for group, wu in (groups or {}).items()},
                    quantum=units / 100,
                    reporter=f"p{process}",
                )
            )
    return [autoshard.Reports(samples, int((until_s - autoshard.QUIET_SECONDS - 60) * 1000))]


def test_throttles_one_fifo_group_explains_grow_nothing(client: QueueClient) -> None:
    """A FIFO queue of 4 shards whose throttled key carries one group near a key's limit: more shards would move
    nothing off that key. The same throttles with enough load in other groups grow the count four times at once."""
    at = 1_000.0
    settings = client.create_queue("hot.fifo").resharded(4, now_ms=int((at - 100) * 1000), spread_ms=40_000)
    throttled = autoshard.THROTTLES_PER_MINUTE

    def decided(total: float, groups: dict[str, float], processes: int = 1) -> autoshard.Decision:
        reports = _reports(total, at, throttles_per_minute=throttled, processes=processes, groups=groups)
        return autoshard.decision(settings, reports, int(at * 1000))

    assert decided(1_000, {"hot": 970}) == autoshard.Decision(4, "one_group", throttled), "one group's own limit"
    assert decided(2_000, {"hot": 700}).shards == 16, "1,300 more in other groups: a third of a key each"
    assert decided(990, {"g": 990}, processes=3).shards == 4, "three processes, one group"


def test_the_count_has_hysteresis_and_never_flaps(client: QueueClient) -> None:
    """A standard queue of 8 shards (its sends go round them: each key carries an eighth of the total): grows past
    half a key's limit (sized for a quarter), shrinks only after a quiet period under a tenth."""
    at = 1_000.0
    settings = client.create_queue("steady").resharded(8, now_ms=int((at - 100) * 1000), spread_ms=40_000)

    def wanted(per_key: float | None, now: float = at, until: float | None = None, **load) -> int:
        reports = [] if per_key is None else _reports(8 * per_key, now if until is None else until, **load)
        return autoshard.wanted_shards(settings, reports, int(now * 1000))

    throttled = autoshard.THROTTLES_PER_MINUTE
    assert wanted(450) == 8, "under half a key's limit: stays"
    assert wanted(600) == 32, "past half: sized for a quarter (4,800 / 250 = 19.2, up to 32)"
    assert wanted(300, throttles_per_minute=throttled) == 32, "throttled: four times at once"
    assert wanted(50, throttles_per_minute=throttled) == 8, "throttles the load does not explain"
    assert wanted(50, throttles_per_minute=12) == 8, "a throttle now and then is noise"
    assert wanted(400, processes=8) == 8, "eight processes, 3,200 in all over 8 keys: 400 a key, not 3,200"
    assert wanted(90, until=at - 10) == 8, "under a tenth, but not quiet long enough since the change"
    quiet = at - 100 + autoshard.QUIET_SECONDS
    assert wanted(90, now=quiet, seconds=autoshard.QUIET_SECONDS) == 4, "quiet: straight to the need (720 / 250)"
    assert wanted(150, now=quiet, seconds=autoshard.QUIET_SECONDS) == 8, "between a tenth and a half: stays"
    assert wanted(None, now=quiet) == 1, "no report at all: back to the minimum"
    assert wanted(900, until=at - 30) == 8, "a stale report"


def test_a_short_step_shows_at_once_and_one_thin_report_grows_nothing(client: QueueClient) -> None:
    """The load is the highest rate the reports show beyond their sampling error over the last 5, 10 or 20 s: a
    step up five seconds ago counts at its new rate, and one report of a thin sender (it may stand for a small part
    of its quantum) is no reason to grow."""
    at = 1_000.0
    settings = client.create_queue("step")
    step = _reports(600, at, seconds=5)[0].samples + _reports(50, at - 5, seconds=15)[0].samples
    assert autoshard.wanted_shards(settings, [autoshard.Reports(step, 0)], int(at * 1000)) == 4
    thin = autoshard.Sample(int(at * 1000), 1_000, 0, quantum=1_000, reporter="thin")
    assert autoshard.wanted_shards(settings, [autoshard.Reports([thin], 0)], int(at * 1000)) == 1


def test_bodies_offloaded_to_s3_count_as_the_pointer_they_leave(large: QueueClient, clock: FakeClock) -> None:
    """Two 200 KB messages a second: each leaves a small item (its body goes to S3), far under a key's limit.
    Counted at their full size they would read as 1,600 write units a second on one key and grow the queue."""
    large.create_queue("big")
    queue = large.queue("big", "c")
    body = "y" * (200 * 1024)
    sent = []
    for number in range(2 * autoshard.FLUSH_SECONDS):
        sent.append(f"{number}:{body}")
        queue.send(sent[-1])
    clock.advance(autoshard.FLUSH_SECONDS)
    sent.append(f"last:{body}")
    queue.send(sent[-1])
    assert large.sweep().shards == [{"queue": "big", "shards": 1, "auto": True}]
    assert sorted(_drain(queue)) == sorted(sent)
