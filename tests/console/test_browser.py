"""The console in a real browser: an operator's whole journey through a queue's life, checked on screen and
against the API; hostile bodies, attributes and ids that must stay text; axe-core on every view; and a screenshot
of each view for the README. All in one module, so one Chromium serves them all."""

from __future__ import annotations

import json
import os
import shutil
import threading
import time
from collections.abc import Callable, Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest
from botocore.stub import Stubber
from selenium.common.exceptions import StaleElementReferenceException, TimeoutException
from selenium.webdriver.common.by import By
from selenium.webdriver.common.keys import Keys
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.support.ui import WebDriverWait

from dq.console import ConsoleServer, launch
from dq.metrics import MetricsReader
from dq.targets import HttpTarget, TargetError
from tests.cloudwatch import cloudwatch_client, emf_records, moto_cloudwatch, put_emf
from tests.console.conftest import AXE, SCREENSHOTS
from tests.console.test_security import request

WAIT_SECONDS = 15
# How often a wait looks again: WebDriverWait's own half second made every step that waits for an answer take 0.5 s.
POLL_SECONDS = 0.05
SERIOUS = ("serious", "critical")


def until(browser: WebDriver, check: Callable[[WebDriver], Any], what: str) -> Any:
    # Views redraw their rows as answers come: an element read between two draws is stale, and read again.
    wait = WebDriverWait(
        browser, WAIT_SECONDS, poll_frequency=POLL_SECONDS, ignored_exceptions=(StaleElementReferenceException,)
    )
    try:
        return wait.until(check, f"waited {WAIT_SECONDS} s for {what}")
    except TimeoutException as timeout:
        raise TimeoutException(f"{timeout.msg}; the page: {page_state(browser)}") from None


def page_state(browser: WebDriver) -> dict[str, Any]:
    """What a wait that ran out saw: where the page is, which view it shows and whether it loaded, and what its
    status line and notice say."""
    return browser.execute_script(
        """const view = document.querySelector("#view > [data-view]");
        const text = (selector) => (document.querySelector(selector) || {}).textContent || null;
        return { url: location.href, view: view && view.getAttribute("data-view"),
                 loaded: view && view.getAttribute("data-loaded"),
                 status: text("#status"), notice: text("#notice") };"""
    )


def visit(browser: WebDriver, console: ConsoleServer, route: str, view: str) -> Any:
    """Navigates to a view's own URL and waits until its data is on screen; the view's element."""
    browser.get(f"{console.origin}/{route}")
    selector = f'#view > [data-view="{view}"][data-loaded="true"]'
    return until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, selector), f"the {view} view")[0]


def loaded(browser: WebDriver, view: str) -> Any:
    selector = f'#view > [data-view="{view}"][data-loaded="true"]'
    return until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, selector), f"the {view} view")[0]


def text_of(browser: WebDriver, selector: str) -> str:
    return str(read(browser, selector, lambda element: element.text))


def wait_text(browser: WebDriver, selector: str, wanted: str) -> None:
    def shows(d: WebDriver) -> bool:
        return any(wanted in element.text for element in d.find_elements(By.CSS_SELECTOR, selector))

    try:
        until(browser, shows, f"{wanted!r} in {selector}")
    except TimeoutException:
        seen = [element.text for element in browser.find_elements(By.CSS_SELECTOR, f"{selector}, #notice")]
        raise AssertionError(f"{wanted!r} not in {selector}; the page shows {seen}") from None


def fill(browser: WebDriver, selector: str, value: str) -> None:
    field = browser.find_element(By.CSS_SELECTOR, selector)
    field.clear()
    field.send_keys(value)


def read(browser: WebDriver, selector: str, what: Callable[[Any], Any]) -> Any:
    """What `what` reads of the element as it is now; read again when a refresh redrew it between the find and the
    read (an empty text is an answer too, unlike `until`'s)."""
    deadline = time.monotonic() + WAIT_SECONDS
    while True:
        try:
            return what(browser.find_element(By.CSS_SELECTOR, selector))
        except StaleElementReferenceException:
            if time.monotonic() > deadline:
                raise


def _priorities(browser: WebDriver) -> list[str]:
    """The messages table's priority column, top down (read again by `until` when a refresh redraws a row)."""
    rows = browser.find_elements(By.CSS_SELECTOR, "#messages tr[data-message]")
    return [row.find_elements(By.TAG_NAME, "td")[2].text for row in rows]


def click(browser: WebDriver, selector: str) -> None:
    """Finds and clicks again when the page's refresh re-rendered the element in between (it keeps its state:
    a ticked row stays ticked), as a person's click lands on what is on screen at that moment."""
    read(browser, selector, lambda element: element.click())


def accessibility(browser: WebDriver, view: str, report: dict[str, list[dict[str, Any]]]) -> None:
    """axe-core's violations on the page as it is now, by view; the caller asserts none is serious."""
    if not browser.execute_script("return typeof window.axe === 'object'"):
        browser.execute_script(AXE.read_text(encoding="utf-8"))
    violations = browser.execute_async_script(
        "const done = arguments[arguments.length - 1];"
        "axe.run(document, {resultTypes: ['violations']}).then("
        "  (r) => done(r.violations.map((v) => ({"
        "    id: v.id, impact: v.impact, nodes: v.nodes.map((n) => n.target.join(' '))}))),"
        "  (e) => done([{id: 'axe-failed', impact: 'critical', nodes: String(e)}]));"
    )
    report[view] = violations


def screenshot(browser: WebDriver, name: str) -> None:
    """The README's picture of a view, written when `DQ_CONSOLE_SCREENSHOTS` is set (`make screenshots`): every
    run would otherwise leave the checkout changed by pictures that differ only in their clock."""
    if not os.environ.get("DQ_CONSOLE_SCREENSHOTS"):
        return
    SCREENSHOTS.mkdir(parents=True, exist_ok=True)
    browser.execute_script(
        "if (!document.querySelector('dialog[open]')) document.activeElement.blur(); window.scrollTo(0, 0)"
    )
    browser.save_screenshot(str(SCREENSHOTS / f"{name}.png"))


def confirm(browser: WebDriver, opener: str) -> None:
    """Clicks a destructive action and says yes in the dialog it opens."""
    click(browser, opener)
    until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "dialog[open] #dialog-confirm"), "the confirmation")
    browser.find_element(By.CSS_SELECTOR, "dialog[open] #dialog-confirm").click()
    until(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, "dialog[open]"), "the confirmation to close")


@pytest.fixture(scope="module")
def signed_in(browser: WebDriver, console: ConsoleServer) -> WebDriver:
    """The printed URL once: the page keeps the secret for its tab and takes it out of the address bar."""
    browser.get(console.url)
    loaded(browser, "queues")
    assert "token" not in browser.current_url
    return browser


def stats(api: HttpTarget, queue: str, client: str) -> dict[str, int]:
    figures = api.stats(queue, client)
    return {key: figures[key] for key in ("visible", "in_flight", "delayed", "dlq")}


def listed(browser: WebDriver) -> list[str]:
    return [
        row.get_attribute("data-message")
        for row in browser.find_elements(By.CSS_SELECTOR, "#messages tr[data-message]")
    ]


def browse_every_state(browser: WebDriver, api: HttpTarget, queue: str, client: str, held: str) -> None:
    """The list is the API's browse: the message held in flight and one a sender delayed are listed with their
    state and its end, and the state filter asks the API for one state. The delayed one is cancelled after."""
    later = api.send(queue, client, {"body": "later", "delay_seconds": 600})["message_id"]
    until(browser, lambda d: later in listed(d), "the delayed message")
    assert "delayed until" in text_of(browser, f'#messages tr[data-message="{later}"]')
    assert "in flight until" in text_of(browser, f'#messages tr[data-message="{held}"]')
    for state, wanted in (("delayed", [later]), ("in_flight", [held])):
        browser.find_element(By.CSS_SELECTOR, f"#state-filter option[value='{state}']").click()
        until(browser, lambda d, wanted=wanted: listed(d) == wanted, f"only the {state} message")
    browser.find_element(By.CSS_SELECTOR, "#state-filter option[value='']").click()
    until(browser, lambda d: len(listed(d)) == 4, "every state")
    assert "the end of the sub-queue" in text_of(browser, "#messages-page")
    api.cancel(queue, client, later)
    until(browser, lambda d: len(listed(d)) == 3, "the delayed message cancelled")


def test_an_operator_takes_a_queue_through_its_life(
    signed_in: WebDriver, console: ConsoleServer, api: HttpTarget
) -> None:
    browser, queue, client = signed_in, "journey", "tenant-a"
    report: dict[str, list[dict[str, Any]]] = {}
    api.create_queue("neighbour", {})
    api.send("neighbour", "other", {"body": "a neighbour's message"})

    # Create the queue.
    visit(browser, console, "#/create", "create")
    accessibility(browser, "create", report)
    screenshot(browser, "create")
    fill(browser, "#name", queue)
    fill(browser, "#visibility_timeout", "45")
    click(browser, "#create button[type=submit]")
    loaded(browser, "queue")
    wait_text(browser, "#notice", f"Created queue {queue}")
    assert api.get_queue(queue)["visibility_timeout"] == 45

    # A setting the API refuses shows the API's message beside the field; one it takes is saved.
    fill(browser, "#setting-visibility_timeout", "999999")
    click(browser, "#setting-visibility_timeout ~ button")
    wait_text(browser, "#setting-visibility_timeout-message", "ValidationError")
    assert "visibility_timeout" in text_of(browser, "#setting-visibility_timeout-message")
    fill(browser, "#setting-visibility_timeout", "60")
    click(browser, "#setting-visibility_timeout ~ button")
    wait_text(browser, "#setting-visibility_timeout-message", "saved")
    assert api.get_queue(queue)["visibility_timeout"] == 60

    # Send three to a client's sub-queue, and see them.
    fill(browser, "#client-id", client)
    click(browser, "#open-client button")
    loaded(browser, "client")
    sent: list[str] = []
    for n in (1, 2, 3):
        fill(browser, "#send-body", json.dumps({"order": n, "items": ["book", "pen"]}))
        fill(browser, "#send-attributes", f'{{"source": "console", "weight": "{n}"}}')
        fill(browser, "#send-types", '{"weight": "Number"}')
        fill(browser, "#send-priority", str(n))
        fill(browser, "#send-dedup", f"{n}0{n}")  # a dedup id of digits is still text to the API
        click(browser, "#send button[type=submit]")
        until(browser, lambda d: text_of(d, "#send-result").removeprefix("Sent ") not in ("", *sent), "the next send")
        sent.append(text_of(browser, "#send-result").removeprefix("Sent "))
    # A new priority's messages are read once the queue's readers learn of the band (a few seconds).
    until(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#messages tr[data-message]")) == 3, "3 rows")
    assert stats(api, queue, client) == {"visible": 3, "in_flight": 0, "delayed": 0, "dlq": 0}
    assert [api.get(queue, client, message_id)["dedup_id"] for message_id in sent] == ["101", "202", "303"]
    until(browser, lambda d: _priorities(d) == ["3", "2", "1"], "the rows by priority, highest first")
    browser.find_element(By.CSS_SELECTOR, "#priority-filter option[value='2']").click()
    until(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#messages tr[data-message]")) == 1, "filtered")
    browser.find_element(By.CSS_SELECTOR, "#priority-filter option[value='']").click()
    until(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#messages tr[data-message]")) == 3, "3 rows")
    accessibility(browser, "client", report)
    screenshot(browser, "client")

    # Receive one to look, and delete it.
    fill(browser, "#look-count", "1")
    click(browser, "#look button[type=submit]")
    until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#looked [data-message]"), "a received message")
    first = browser.find_element(By.CSS_SELECTOR, "#looked [data-message]").get_attribute("data-message")
    wait_text(browser, "#messages", "in flight until")
    assert stats(api, queue, client)["in_flight"] == 1
    browse_every_state(browser, api, queue, client, first)
    confirm(browser, f'#looked [data-message="{first}"] [data-action=delete]')
    wait_text(browser, "#notice", f"Deleted {first}")
    assert stats(api, queue, client) == {"visible": 2, "in_flight": 0, "delayed": 0, "dlq": 0}
    with pytest.raises(TargetError, match="MessageNotFound"):
        api.get(queue, client, first)

    # Receive one and release it: visible again, its receive counted.
    click(browser, "#look button[type=submit]")
    until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#looked [data-message]"), "a received message")
    second = browser.find_element(By.CSS_SELECTOR, "#looked [data-message]").get_attribute("data-message")
    click(browser, f'#looked [data-message="{second}"] [data-action=release]')
    wait_text(browser, "#notice", f"Released {second}")
    assert stats(api, queue, client) == {"visible": 2, "in_flight": 0, "delayed": 0, "dlq": 0}
    assert api.get(queue, client, second)["receive_count"] == 1

    # A message's detail, then drive it to the DLQ.
    visit(browser, console, f"#/q/{queue}/c/{client}/m/{second}", "message")
    assert "State\nvisible" in text_of(browser, "dl.detail")
    assert '"items": [\n    "book",' in text_of(browser, "#body")
    assert "weight Number 2" in text_of(browser, "#attributes")
    assert "Body stored\nin the item, as sent" in text_of(browser, "dl.detail")
    accessibility(browser, "message", report)
    screenshot(browser, "message")
    confirm(browser, "#move-to-dlq")
    wait_text(browser, "#notice", f"Moved {second} to the DLQ")
    wait_text(browser, "dl.detail", "in the DLQ")
    assert stats(api, queue, client)["dlq"] == 1 and api.get(queue, client, second)["state"] == "dlq"

    # Redrive it from the DLQ by id.
    visit(browser, console, f"#/q/{queue}/c/{client}/dlq", "dlq")
    until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, f'#dlq tr[data-message="{second}"]'), "the dead letter")
    moved = browser.find_elements(By.CSS_SELECTOR, f'#dlq tr[data-message="{second}"] td')[3].text
    assert moved not in ("", "—")  # when it was moved
    accessibility(browser, "dlq", report)
    screenshot(browser, "dlq")
    click(browser, f'#dlq tr[data-message="{second}"] input[type=checkbox]')
    click(browser, "#redrive-selected")
    wait_text(browser, "#redrive-result", "Redrove 1 message(s)")
    wait_text(browser, "#dlq", "The DLQ is empty.")
    assert stats(api, queue, client) == {"visible": 2, "in_flight": 0, "delayed": 0, "dlq": 0}

    # Charts of the client and of the queue, sampled while open.
    visit(browser, console, f"#/q/{queue}/c/{client}/charts", "client-charts")
    assert browser.find_elements(By.CSS_SELECTOR, "svg.chart polyline.s-visible")
    accessibility(browser, "client-charts", report)
    screenshot(browser, "client-charts")
    visit(browser, console, f"#/q/{queue}/charts", "queue-charts")
    accessibility(browser, "queue-charts", report)

    # The queues page: both queues with their figures, sortable and filterable.
    visit(browser, console, "#/", "queues")
    until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, '#view [data-figures="complete"]'), "the figures")
    wait_text(browser, f'#queues tr[data-queue="{queue}"] td:nth-of-type(3)', "2")
    names = [row.get_attribute("data-queue") for row in browser.find_elements(By.CSS_SELECTOR, "#queues tbody tr")]
    assert names[:2] == ["journey", "neighbour"] or set(names) >= {"journey", "neighbour"}
    click(browser, "#queues button[data-sort=visible]")
    until(browser, lambda d: "sort=visible" in d.current_url, "the sort in the URL")
    fill(browser, "#filter", "neigh")
    until(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#queues tbody tr")) == 1, "one queue")
    until(browser, lambda d: "filter=neigh" in d.current_url, "the filter in the URL")
    fill(browser, "#filter", "")
    until(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#queues tbody tr")) >= 2, "every queue")
    accessibility(browser, "queues", report)
    screenshot(browser, "queues")

    # The queue: its clients and the queue-wide view by priority.
    visit(browser, console, f"#/q/{queue}", "queue")
    wait_text(browser, f'#clients tr[data-client="{client}"]', "2")
    assert text_of(browser, "#priorities").splitlines()[-2:] == ["2 1 0 0", "1 1 0 0"]
    accessibility(browser, "queue", report)
    screenshot(browser, "queue")

    # Purge the sub-queue, confirmed.
    visit(browser, console, f"#/q/{queue}/c/{client}", "client")
    confirm(browser, "#purge")
    wait_text(browser, "#notice", f"Purged 2 messages from {queue}/{client}")
    assert stats(api, queue, client) == {"visible": 0, "in_flight": 0, "delayed": 0, "dlq": 0}

    # Delete the queue, typing its name.
    visit(browser, console, f"#/q/{queue}", "queue")
    click(browser, "#delete-queue")
    delete = until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "dialog[open] #dialog-confirm"), "the dialog")[0]
    fill(browser, "#dialog-typed", "journe")
    assert not delete.is_enabled()
    fill(browser, "#dialog-typed", queue)
    accessibility(browser, "delete-dialog", report)
    screenshot(browser, "confirm")
    delete.click()
    loaded(browser, "queues")
    wait_text(browser, "#notice", f"Deleted queue {queue}")
    with pytest.raises(TargetError, match="QueueNotFound"):
        api.get_queue(queue)

    serious = {view: [v for v in found if v["impact"] in SERIOUS] for view, found in report.items()}
    assert set(report) == {
        *("create", "client", "message", "dlq", "client-charts", "queue-charts", "queues", "queue", "delete-dialog")
    }
    assert not any(serious.values()), serious


FAILURE = "KeyError: 'customer_id' </script><script>window.__injected = 1</script>"
TRACEBACK = 'Traceback (most recent call last):\n  File "<img src=x onerror=window.__injected=1>", line 1'


def test_an_operator_reads_why_messages_failed_and_replays_the_archive(
    signed_in: WebDriver, console: ConsoleServer, api: HttpTarget
) -> None:
    """Failure reasons on the DLQ (each dead letter's last, grouped with counts, redriven by reason, replayed by
    reason) and on the message (its attempts); the archive listed and replayed by id to its end, a replay
    cancelled; a queue with no archive says so. Hostile reasons stay text."""
    browser, queue, client = signed_in, "undo", "tenant-r"
    report: dict[str, list[dict[str, Any]]] = {}
    api.create_queue(queue, {"archive_days": 1, "max_receive_count": 1})
    for n in range(4):
        api.send(queue, client, {"body": f"order {n}"})
    taken = api.receive(queue, client, {"max_messages": 10, "visibility_timeout": 60})["messages"]
    assert len(taken) == 4
    failed, acked = taken[:2], taken[2:]
    for message in failed:
        api.release(queue, client, message["receipt_handle"], 0, f"{FAILURE}\n{TRACEBACK}")
    api.delete(queue, client, [message["receipt_handle"] for message in acked])
    # Past their one receive: the next receive moves them to the DLQ, the release's reason with them.
    assert api.receive(queue, client, {"max_messages": 10})["messages"] == []
    dead = failed[0]["message_id"]

    visit(browser, console, f"#/q/{queue}/c/{client}/dlq", "dlq")
    wait_text(browser, f'#dlq tr[data-message="{dead}"]', FAILURE)
    wait_text(browser, '#reasons tr[data-reason="0"]', f"2 \N{MULTIPLICATION SIGN} {FAILURE}")
    accessibility(browser, "dlq-reasons", report)
    screenshot(browser, "dlq-reasons")

    visit(browser, console, f"#/q/{queue}/c/{client}/m/{dead}", "message")
    attempt = text_of(browser, '#attempts tr[data-attempt="1"]')
    assert attempt.startswith(f"1 released {FAILURE}") and TRACEBACK in attempt, attempt
    assert "max receives 1 reached" in text_of(browser, "dl.detail")
    accessibility(browser, "message-attempts", report)
    screenshot(browser, "message-attempts")

    visit(browser, console, f"#/q/{queue}/c/{client}/dlq", "dlq")
    confirm(browser, '#reasons tr[data-reason="0"] [data-action=redrive-reason]')
    wait_text(browser, "#redrive-result", f"Redrove 2 message(s) (last reason: {FAILURE})")
    wait_text(browser, "#dlq", "The DLQ is empty.")
    assert stats(api, queue, client) == {"visible": 2, "in_flight": 0, "delayed": 0, "dlq": 0}

    # The same two fail again, for another reason, and are replayed by it from the DLQ as new messages.
    for message in api.receive(queue, client, {"max_messages": 10, "visibility_timeout": 60})["messages"]:
        api.release(queue, client, message["receipt_handle"], 0, "ValueError: <b>bad sku</b>")
    assert api.receive(queue, client, {"max_messages": 10})["messages"] == []
    visit(browser, console, f"#/q/{queue}/c/{client}/dlq", "dlq")
    wait_text(browser, '#reasons tr[data-reason="0"]', "ValueError: <b>bad sku</b>")
    confirm(browser, '#reasons tr[data-reason="0"] [data-action=replay-reason]')
    wait_text(browser, "#redrive-result", "done, 2 replayed, 0 skipped, 0 failed from the DLQ")
    wait_text(browser, "#dlq", "The DLQ is empty.")
    assert stats(api, queue, client) == {"visible": 2, "in_flight": 0, "delayed": 0, "dlq": 0}

    # The archive: the two acknowledged, newest first; one replayed by id, run by the page to its end; a replay
    # left running (started elsewhere) shown with its counts, and cancelled after a confirmation.
    running = api.replay_start(queue, client, {"rate": 1, "run_seconds": 0})["replay_id"]
    visit(browser, console, f"#/q/{queue}/c/{client}/archive", "archive")
    archived = [
        row.get_attribute("data-message") for row in browser.find_elements(By.CSS_SELECTOR, "#archive tr[data-message]")
    ]
    assert sorted(archived) == sorted(message["message_id"] for message in acked)
    assert "the end of the range" in text_of(browser, "#archive-page")
    click(browser, f'#archive tr[data-message="{archived[0]}"] input[type=checkbox]')
    confirm(browser, "#replay-selected")
    wait_text(browser, "#replays-table tr[data-state=done]", "done, 1 replayed, 0 skipped, 0 failed of 1 ids")
    replayed = api.replay_list(queue, client, None, 2)["replays"][0]
    assert (replayed["state"], replayed["replayed"], replayed["message_ids"]) == ("done", 1, archived[:1])
    assert stats(api, queue, client)["visible"] == 3
    click(browser, f'#archive tr[data-message="{archived[1]}"] button')
    wait_text(browser, "#archived", "order ")
    accessibility(browser, "archive", report)
    screenshot(browser, "archive")

    wait_text(browser, f'#replays-table tr[data-replay="{running}"]', "running, 0 replayed")
    confirm(browser, f'#replays-table tr[data-replay="{running}"] [data-action=cancel]')
    wait_text(browser, "#notice", f"Cancelled replay {running}: cancelled, 0 replayed")
    assert api.replay_list(queue, client, running, 1)["replays"][0]["state"] == "cancelled"

    api.create_queue("kept-none", {})
    visit(browser, console, f"#/q/kept-none/c/{client}/archive", "archive")
    assert "kept-none keeps no archive" in text_of(browser, "#no-archive")

    assert browser.execute_script("return window.__injected") is None
    serious = {view: [v for v in found if v["impact"] in SERIOUS] for view, found in report.items()}
    assert not any(serious.values()), serious
    api.delete_queue(queue)
    api.delete_queue("kept-none")


HOSTILE = (
    '<img src=x onerror="window.__injected = 1">',
    "</script><script>window.__injected = 1</script>",
    '"><svg onload="window.__injected=1">',
)


def test_hostile_bodies_attributes_and_ids_stay_text(
    signed_in: WebDriver, console: ConsoleServer, api: HttpTarget
) -> None:
    browser, queue, client = signed_in, "hostile", "tenant-x"
    api.create_queue(queue, {})
    ids = []
    for n, text in enumerate(HOSTILE):
        sent = api.send(
            queue,
            client,
            {"body": text, "attributes": {text[:40]: text}, "dedup_id": f"d{n}" + text.replace(" ", "")[:30]},
        )
        ids.append(sent["message_id"])
    api.move_to_dlq(queue, client, ids[0])
    browser.execute_script("window.__injected = undefined")

    visit(browser, console, f"#/q/{queue}/c/{client}", "client")
    until(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#messages tr[data-message]")) == 2, "two rows")
    assert HOSTILE[1] in text_of(browser, "#messages")
    click(browser, "#look button[type=submit]")
    until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#looked [data-message]"), "a received message")
    assert any(text in text_of(browser, "#looked") for text in HOSTILE[1:])
    for message_id in ids:
        visit(browser, console, f"#/q/{queue}/c/{client}/m/{message_id}", "message")
        assert text_of(browser, "#body") in HOSTILE
    visit(browser, console, f"#/q/{queue}/c/{client}/dlq", "dlq")
    assert HOSTILE[0] in text_of(browser, "#dlq")
    forged = "%3Cimg%20src%3Dx%20onerror%3D%22window.__injected%3D1%22%3E"
    visit(browser, console, f"#/q/{queue}/c/{client}/m/{forged}", "message")
    assert "<img src=x" in text_of(browser, "#view")
    time.sleep(0.3)  # an image's error handler would have run by now
    assert browser.execute_script("return window.__injected") is None
    assert not browser.find_elements(By.CSS_SELECTOR, "#view img, #view script, #view [onerror], #view [onload]")
    visit(browser, console, f"#/q/{queue}/c/%E0%A4%A", "missing")
    api.delete_queue(queue)


# ---- charts from CloudWatch, the `--open` page, and the controls the journey above does not click ------------

CHARTED, CHARTED_CLIENT = "charted", "tenant-c"


@pytest.fixture(scope="module")
def cloudwatch() -> Iterator[Any]:
    with moto_cloudwatch() as endpoint:
        yield cloudwatch_client(endpoint)


def sign_in(browser: WebDriver, console: ConsoleServer) -> WebDriver:
    browser.get(console.url)
    until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, '#view > [data-loaded="true"]'), "the first view")
    return browser


def label(browser: WebDriver, selector: str) -> str:
    return str(read(browser, selector, lambda element: element.get_attribute("aria-label")))


def test_charts_show_what_the_stack_published_to_cloudwatch(
    browser: WebDriver, api: HttpTarget, cloudwatch: Any
) -> None:
    api.create_queue(CHARTED, {})
    api.send(CHARTED, CHARTED_CLIENT, {"body": "one"})
    for minutes_ago, visible, shards in ((12, 4, 1), (7, 9, 2), (2, 5, 2)):
        depths = [
            {"queue": CHARTED, "client": CHARTED_CLIENT, "visible": visible, "in_flight": 1, "delayed": 0, "dlq": 2,
             "oldest_age_seconds": 60 * minutes_ago},
            {"queue": CHARTED, "client": "tenant-d", "visible": 1, "in_flight": 0, "delayed": 3, "dlq": 0,
             "oldest_age_seconds": 30},
        ]  # fmt: skip
        put_emf(cloudwatch, emf_records(depths, [{"queue": CHARTED, "shards": shards}]), time.time() - minutes_ago * 60)
    report: dict[str, list[dict[str, Any]]] = {}
    with ConsoleServer(HttpTarget(api.name), metrics=MetricsReader(cloudwatch)) as console:
        sign_in(browser, console)
        visit(browser, console, f"#/q/{CHARTED}/c/{CHARTED_CLIENT}/charts", "client-charts")
        assert text_of(browser, "#metrics-source").startswith(
            "From CloudWatch: DynamoQueue in us-east-1, the Maximum of each 1 min over the last 60 min."
        )
        assert browser.find_elements(By.CSS_SELECTOR, "#cloudwatch svg.chart polyline.s-visible")
        backlog = label(browser, "#cloudwatch svg.chart")
        assert backlog == "Backlog from CloudWatch: 3 points; latest Visible 5, In flight 1, Delayed 0, DLQ 2", backlog
        assert "latest Visible 1," in label(browser, "#sampled svg.chart")  # the page's own sample, beside them
        accessibility(browser, "client-charts-cloudwatch", report)
        screenshot(browser, "cloudwatch-charts")

        visit(browser, console, f"#/q/{CHARTED}/charts", "queue-charts")
        assert "the sum of 2 client(s)." in text_of(browser, "#metrics-source")
        charts = browser.find_elements(By.CSS_SELECTOR, "#cloudwatch svg.chart")
        labels = [chart.get_attribute("aria-label") for chart in charts]
        assert labels[0].endswith("latest Visible 6, In flight 1, Delayed 3, DLQ 2"), labels
        assert labels[2] == "Shards from CloudWatch: 3 points; latest shards 2", labels
        accessibility(browser, "queue-charts-cloudwatch", report)
    api.delete_queue(CHARTED)
    serious = {view: [v for v in found if v["impact"] in SERIOUS] for view, found in report.items()}
    assert not any(serious.values()), serious


def test_charts_fall_back_to_the_pages_samples_and_say_why(
    browser: WebDriver, api: HttpTarget, console: ConsoleServer
) -> None:
    api.create_queue(CHARTED, {})
    sign_in(browser, console)
    visit(browser, console, f"#/q/{CHARTED}/charts", "queue-charts")
    assert text_of(browser, "#metrics-source") == (
        "Not read from CloudWatch: the local server publishes no CloudWatch metric. "
        "The charts below are this page's own samples."
    )
    assert not browser.find_elements(By.CSS_SELECTOR, "#cloudwatch svg")

    denied = cloudwatch_client("http://127.0.0.1:9")
    with Stubber(denied) as stub, ConsoleServer(HttpTarget(api.name), metrics=MetricsReader(denied)) as refused:
        for _ in range(3):
            stub.add_client_error(
                "get_metric_data",
                service_error_code="AccessDenied",
                service_message="not authorized to perform: cloudwatch:GetMetricData",
                http_status_code=403,
            )
        sign_in(browser, refused)
        visit(browser, refused, f"#/q/{CHARTED}/c/{CHARTED_CLIENT}/charts", "client-charts")
        shown = text_of(browser, "#metrics-source")
        assert shown.startswith("Not read from CloudWatch: AccessDenied: these credentials cannot read CloudWatch"), (
            shown
        )
        assert shown.endswith("The charts below are this page's own samples.")
        assert browser.find_elements(By.CSS_SELECTOR, "#sampled svg.chart")
    api.delete_queue(CHARTED)


def test_the_private_page_of_open_leads_the_browser_to_the_console_signed_in(
    browser: WebDriver, api: HttpTarget
) -> None:
    with ConsoleServer(HttpTarget(api.name)) as console:
        page = launch.private_page(console.url)
        try:
            browser.get(page.as_uri())
            # The queues view writes its route into the fragment (`#/`) as soon as it renders.
            until(browser, lambda d: d.current_url.split("#")[0] == f"{console.origin}/", "the console's own address")
            loaded(browser, "queues")
            assert console.token not in browser.current_url
        finally:
            shutil.rmtree(page.parent)


# A page of another local user's server, on another port of 127.0.0.1: to a browser the same site as the console.
# It sends one request to its own server with everything its script can read of cookies and storage.
ELSEWHERE_PAGE = b"""<!doctype html><html lang="en"><head><meta charset="utf-8"><title>elsewhere</title></head><body>
<script>
const seen = { cookie: document.cookie, local: { ...localStorage }, session: { ...sessionStorage } };
fetch("/collect", { method: "POST", credentials: "include", body: JSON.stringify(seen) })
  .then(() => { document.title = "collected"; });
</script></body></html>
"""


class Elsewhere:
    """A plain HTTP server on its own 127.0.0.1 port that answers every request with `ELSEWHERE_PAGE` and keeps
    each request as it came: its line, every header (Cookie included) and its body."""

    def __init__(self) -> None:
        self.received: list[tuple[str, list[tuple[str, str]], bytes]] = []
        received = self.received

        class Recorder(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def _record(self) -> None:
                length = int(self.headers.get("Content-Length") or 0)
                body = self.rfile.read(length) if length else b""
                received.append((self.requestline, list(self.headers.items()), body))
                self.send_response(200)
                self.send_header("Content-Type", "text/html; charset=utf-8")
                self.send_header("Content-Length", str(len(ELSEWHERE_PAGE)))
                self.end_headers()
                self.wfile.write(ELSEWHERE_PAGE)

            do_GET = do_POST = _record

            def log_message(self, format: str, *args: Any) -> None:
                """Silent: the test reads `received`."""

        self._http = ThreadingHTTPServer(("127.0.0.1", 0), Recorder)
        self.origin = f"http://127.0.0.1:{self._http.server_address[1]}"

    def __enter__(self) -> Elsewhere:
        threading.Thread(target=self._http.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *_exc: object) -> None:
        self._http.shutdown()
        self._http.server_close()


def test_a_page_on_another_local_port_learns_nothing_of_the_console(browser: WebDriver, console: ConsoleServer) -> None:
    """Cookies ignore the port, so a cookie of the console's would go with every request to any other server on
    127.0.0.1: the secret lives in the console's own page and goes out in a header, to the console alone."""
    sign_in(browser, console)
    browser.refresh()
    wait_text(browser, "#target", f"API: {console.target.name}")  # a reload keeps the page signed in
    assert browser.get_cookies() == []
    with Elsewhere() as elsewhere:
        browser.get(f"{elsewhere.origin}/")
        until(browser, lambda d: d.title == "collected", "the page elsewhere to send what it read")
    asked = {tuple(line.split()[:2]): body for line, _, body in elsewhere.received}
    assert {("GET", "/"), ("POST", "/collect")} <= set(asked)  # the browser may ask for a favicon too
    seen = json.loads(asked["POST", "/collect"])
    assert seen == {"cookie": "", "local": {}, "session": {}}
    everything = repr(elsewhere.received)
    assert console.token not in everything and "dq_console" not in everything
    for _, headers, _ in elsewhere.received:
        replayed = {name: value for name, value in headers if name.lower() not in ("host", "content-length")}
        for path in ("/api/info", "/api/queues", f"/api/metrics?queue={CHARTED}&minutes=60"):
            status = request(console, "GET", path, replayed)[0]
            assert status == 403, (path, status)


ROWS = "#messages tr[data-message]"


def rows(browser: WebDriver) -> set[str]:
    return {str(row.get_attribute("data-message")) for row in browser.find_elements(By.CSS_SELECTOR, ROWS)}


def send(browser: WebDriver, sent: list[str], body: str, **fields: str) -> str:
    """Fills the body and the given fields (`""` empties one), sends, and waits for the new id."""
    fill(browser, "#send-body", body)
    for name, value in fields.items():
        fill(browser, f"#send-{name}", value)
    click(browser, "#send button[type=submit]")
    until(browser, lambda d: text_of(d, "#send-result").removeprefix("Sent ") not in ("", *sent), "the next send")
    sent.append(text_of(browser, "#send-result").removeprefix("Sent "))
    return sent[-1]


def choose_state(browser: WebDriver, value: str) -> None:
    browser.find_element(By.CSS_SELECTOR, f"#state-filter option[value='{value}']").click()


def test_an_operator_delays_filters_cancels_and_redrives(
    browser: WebDriver, console: ConsoleServer, api: HttpTarget
) -> None:
    queue, client, sent = "controls", "tenant-b", []

    api.create_queue(queue, {})
    browser.get(console.url)  # the secret, once: this tab's page keeps it from now on

    # Sends: now, after a delay, at a given time.
    visit(browser, console, f"#/q/{queue}/c/{client}", "client")
    plain = send(browser, sent, "now")
    delayed = send(browser, sent, "in ten minutes", delay="600")
    at = int(time.time()) + 3600
    timed = send(browser, sent, "in an hour", delay="", at=str(at))
    until(browser, lambda d: rows(d) == {plain, delayed, timed}, "three rows")
    assert api.stats(queue, client)["delayed"] == 2
    waiting = api.get(queue, client, delayed)
    assert waiting["state"] == "delayed" and abs(waiting["visible_at"] - waiting["sent_at"] - 600_000) < 5_000
    assert api.get(queue, client, timed)["visible_at"] == at * 1000
    wait_text(browser, f'#messages tr[data-message="{timed}"]', "delayed until")

    # The state filter, as the API filters.
    choose_state(browser, "delayed")
    until(browser, lambda d: rows(d) == {delayed, timed}, "the delayed rows")
    choose_state(browser, "visible")
    until(browser, lambda d: rows(d) == {plain}, "the visible row")
    choose_state(browser, "")
    until(browser, lambda d: len(rows(d)) == 3, "every row")

    # Cancel one, confirmed.
    visit(browser, console, f"#/q/{queue}/c/{client}/m/{timed}", "message")
    confirm(browser, "#delete-message")
    wait_text(browser, "#notice", f"Deleted {timed}")
    with pytest.raises(TargetError, match="MessageNotFound"):
        api.get(queue, client, timed)
    assert api.stats(queue, client)["delayed"] == 1

    # Redrive the oldest one, then all.
    later = [api.send(queue, client, {"body": f"more {n}"})["message_id"] for n in (1, 2)]
    for message_id in (plain, *later):  # a delayed message is not moved before it is due
        api.move_to_dlq(queue, client, message_id)
    visit(browser, console, f"#/q/{queue}/c/{client}/dlq", "dlq")
    until(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#dlq tr[data-message]")) == 3, "three dead letters")
    fill(browser, "#redrive-count", "1")
    click(browser, "#redrive-oldest")
    wait_text(browser, "#redrive-result", "Redrove 1 message(s) (the oldest)")
    assert api.stats(queue, client)["dlq"] == 2 and api.get(queue, client, plain)["state"] == "visible"
    until(browser, lambda d: len(d.find_elements(By.CSS_SELECTOR, "#dlq tr[data-message]")) == 2, "two dead letters")
    click(browser, "#redrive-all")
    wait_text(browser, "#redrive-result", "Redrove 2 message(s) (all)")
    wait_text(browser, "#dlq", "The DLQ is empty.")
    assert api.stats(queue, client)["dlq"] == 0
    api.delete_queue(queue)

    # A FIFO queue: sends into groups, and the group filter.
    fifo = "controls.fifo"
    api.create_queue(fifo, {"fifo": True})
    visit(browser, console, f"#/q/{fifo}/c/{client}", "client")
    first = send(browser, [], "first of g-1", group="g-1", dedup="a-1")
    second = send(browser, [first], "first of g-2", group="g-2", dedup="b-1")
    assert [api.get(fifo, client, m)["group_id"] for m in (first, second)] == ["g-1", "g-2"]
    until(browser, lambda d: rows(d) == {first, second}, "both groups")
    browser.find_element(By.CSS_SELECTOR, "#group-filter").send_keys("g-2", Keys.ENTER)
    until(browser, lambda d: rows(d) == {second}, "group g-2 alone")
    wait_text(browser, f'#messages tr[data-message="{second}"]', "g-2")
    fill(browser, "#group-filter", "")
    browser.find_element(By.CSS_SELECTOR, "#group-filter").send_keys(Keys.ENTER)
    until(browser, lambda d: rows(d) == {first, second}, "both groups again")
    api.delete_queue(fifo)


# ---- what an operator met in an afternoon's use: each fixed, each kept fixed here ----------------------------


def test_saving_an_automatic_queues_shards_row_keeps_it_automatic(
    signed_in: WebDriver, console: ConsoleServer, api: HttpTarget
) -> None:
    """The row showed the count an automatic queue is at (`1`), and saving it sent `shards: 1`: sharding fixed."""
    browser, queue = signed_in, "automatic"
    api.create_queue(queue, {})
    visit(browser, console, f"#/q/{queue}", "queue")
    shown = browser.find_element(By.CSS_SELECTOR, "#setting-shards").get_attribute("value")
    assert shown == "auto", shown
    assert text_of(browser, "#setting-shards-hint") == "now 1"
    click(browser, "#setting-shards ~ button")
    wait_text(browser, "#setting-shards-message", "saved")
    assert api.get_queue(queue)["auto_shards"] is True
    assert browser.find_element(By.CSS_SELECTOR, "#setting-shards").get_attribute("value") == "auto"
    assert text_of(browser, "#setting-retention_seconds-hint") == "4 d"  # as `dq queues ls` prints it
    fill(browser, "#setting-visibility_timeout", "45")
    browser.find_element(By.CSS_SELECTOR, "#setting-visibility_timeout").send_keys(Keys.ENTER)  # saves its row
    wait_text(browser, "#setting-visibility_timeout-message", "saved")
    assert api.get_queue(queue)["visibility_timeout"] == 45
    assert text_of(browser, "#setting-visibility_timeout-hint") == "45 s"
    visit(browser, console, "#/", "queues")
    wait_text(browser, f'#queues tr[data-queue="{queue}"]', "1 auto")
    api.delete_queue(queue)


def test_a_content_based_fifo_queue_is_created_with_its_retention_in_days(
    signed_in: WebDriver, console: ConsoleServer, api: HttpTarget
) -> None:
    """Create offers content-based dedup (fixed once created) and takes the retention in days; a FIFO queue's pages
    then show groups, and no priority anywhere (a FIFO queue has none)."""
    browser, queue = signed_in, "by-content.fifo"
    visit(browser, console, "#/create", "create")
    assert not browser.find_element(By.CSS_SELECTOR, "#content_based_dedup").is_enabled()
    fill(browser, "#name", queue)
    click(browser, "#fifo")
    click(browser, "#content_based_dedup")
    fill(browser, "#retention", "2")
    click(browser, "#create button[type=submit]")
    loaded(browser, "queue")
    created = api.get_queue(queue)
    assert (created["fifo"], created["content_based_dedup"], created["retention_seconds"]) == (True, True, 172800)
    wait_text(browser, "#page-actions", "content-based dedup")
    assert not browser.find_elements(By.CSS_SELECTOR, "#priorities")
    visit(browser, console, f"#/q/{queue}/c/tenant-f", "client")
    assert not browser.find_elements(By.CSS_SELECTOR, "#priority-filter, #send-priority")
    assert "Dedup id (empty: the body's hash)" in text_of(browser, "#send")
    first = send(browser, [], "same body", group="g-1")
    assert send(browser, [first], "same body", group="g-1") == f"Duplicate of {first}: nothing sent"
    headers = until(browser, lambda d: [th.text for th in d.find_elements(By.CSS_SELECTOR, "#messages thead th")], "")
    assert "Group" in headers and "Priority" not in headers, headers
    api.delete_queue(queue)


def test_sending_clears_the_form_and_a_delay_past_the_retention_names_the_real_limit(
    signed_in: WebDriver, console: ConsoleServer, api: HttpTarget
) -> None:
    """A sent message leaves an empty form (a second click sends nothing twice); a delay the queue cannot keep is
    refused with its own limit, the retention less 60 s, as `dq` says it; a send from the queue's page asks for
    the client by name, offering the clients it has and SQS's `default`."""
    browser, queue, client = signed_in, "sending", "tenant-s"
    api.create_queue(queue, {"retention_seconds": 3600})
    visit(browser, console, f"#/q/{queue}", "queue")
    assert browser.find_element(By.CSS_SELECTOR, "#send-client").get_attribute("value") == "default"
    assert "whose sub-queue gets it" in text_of(browser, "label[for=send-client]")
    fill(browser, "#send-client", client)
    sent = send(browser, [], "from the queue's page", dedup="once", attributes='{"a": "1"}')
    assert api.get(queue, client, sent.split(" ")[0])["body"] == "from the queue's page"
    for field in ("#send-body", "#send-dedup", "#send-attributes"):
        assert browser.find_element(By.CSS_SELECTOR, field).get_attribute("value") == "", field
    assert browser.find_element(By.CSS_SELECTOR, "#send-client").get_attribute("value") == client

    visit(browser, console, f"#/q/{queue}/c/{client}", "client")
    figures = api.stats(queue, client)  # what `dq stats` prints
    wanted = [str(figures[key]) for key in ("visible", "in_flight", "delayed", "dlq")]
    assert wanted == ["1", "0", "0", "0"]
    tiles = [text.split("\n")[0] for text in text_of(browser, "#view .figures").split("\n")[::2]]
    assert tiles[:4] == wanted, tiles
    fill(browser, "#send-body", "too late")
    fill(browser, "#send-delay", "2000000")
    click(browser, "#send button[type=submit]")
    wait_text(browser, "#send-result", "Delay must be from 0 to 3540 s: the queue's retention (3600 s, 1 h)")
    assert api.stats(queue, client)["delayed"] == 0
    api.delete_queue(queue)


def test_destructive_actions_ask_first_and_the_keyboard_answers(
    signed_in: WebDriver, console: ConsoleServer, api: HttpTarget
) -> None:
    """Deleting a message and moving it to the DLQ each ask in a dialog whose safe answer has the focus: Escape or
    "Go back" changes nothing, the keyboard alone confirms. The notice of the move stays on its own page."""
    browser, queue, client = signed_in, "careful", "tenant-k"
    api.create_queue(queue, {})
    kept = api.send(queue, client, {"body": "keep me"})["message_id"]
    visit(browser, console, f"#/q/{queue}/c/{client}/m/{kept}", "message")
    assert "Cancel" not in text_of(browser, "#page-actions")

    browser.find_element(By.CSS_SELECTOR, "#delete-message").send_keys(Keys.ENTER)
    dialog = until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "dialog[open]"), "the dialog")[0]
    assert "cannot be undone" in dialog.text
    assert browser.switch_to.active_element.get_attribute("id") == "dialog-back"
    browser.switch_to.active_element.send_keys(Keys.ESCAPE)
    until(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, "dialog[open]"), "Escape to close the dialog")
    until(browser, lambda d: d.switch_to.active_element.get_attribute("id") == "delete-message", "the focus back")
    click(browser, "#move-to-dlq")
    until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "dialog[open]"), "the dialog")
    click(browser, "#dialog-back")
    until(browser, lambda d: not d.find_elements(By.CSS_SELECTOR, "dialog[open]"), "Go back to close the dialog")
    time.sleep(0.3)
    assert api.get(queue, client, kept)["state"] == "visible"

    confirm(browser, "#move-to-dlq")
    wait_text(browser, "#notice", f"Moved {kept} to the DLQ")
    assert api.get(queue, client, kept)["state"] == "dlq"
    until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "#to-dlq"), "the message shown in the DLQ")
    click(browser, "#to-dlq")
    loaded(browser, "dlq")
    assert text_of(browser, "#notice") == ""

    gone = api.send(queue, client, {"body": "delete me"})["message_id"]
    visit(browser, console, f"#/q/{queue}/c/{client}/m/{gone}", "message")
    browser.find_element(By.CSS_SELECTOR, "#delete-message").send_keys(Keys.ENTER)
    until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, "dialog[open]"), "the dialog")
    browser.switch_to.active_element.send_keys(Keys.TAB)
    assert browser.switch_to.active_element.get_attribute("id") == "dialog-confirm"
    browser.switch_to.active_element.send_keys(Keys.ENTER)
    wait_text(browser, "#notice", f"Deleted {gone}")
    with pytest.raises(TargetError, match="MessageNotFound"):
        api.get(queue, client, gone)
    api.delete_queue(queue)


def test_ids_stay_on_one_line_sparklines_have_a_scale_and_the_sort_an_arrow(
    signed_in: WebDriver, console: ConsoleServer, api: HttpTarget
) -> None:
    browser, queue, client = signed_in, "narrow", "tenant-n"
    api.create_queue(queue, {})
    ids = [api.send(queue, client, {"body": "a long body " * 40})["message_id"] for _ in range(2)]
    api.move_to_dlq(queue, client, ids[1])
    browser.set_window_size(900, 1000)
    try:
        for route, view, table in (("", "client", "#messages"), ("/dlq", "dlq", "#dlq")):
            visit(browser, console, f"#/q/{queue}/c/{client}{route}", view)
            lines = browser.execute_script(
                "return [...document.querySelectorAll(arguments[0])].map((a) => a.getClientRects().length)",
                f"{table} a.id",
            )
            assert lines and set(lines) == {1}, lines
    finally:
        browser.set_window_size(1280, 1000)

    visit(browser, console, "#/", "queues")
    until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, '#view [data-figures="complete"]'), "the figures")
    wait_text(browser, f'#queues tr[data-queue="{queue}"] .spark-scale', "max 1")
    assert "highest 1" in label(browser, f'#queues tr[data-queue="{queue}"] .spark-cell')
    assert text_of(browser, "#queues button[data-sort=name] .arrow") == "▲"
    click(browser, "#queues button[data-sort=visible]")
    until(browser, lambda d: text_of(d, "#queues button[data-sort=visible] .arrow") == "▼", "the arrow down")
    assert text_of(browser, "#queues button[data-sort=name] .arrow") == ""
    api.delete_queue(queue)


def test_an_unknown_queue_says_so_and_offers_nothing_to_act_on(signed_in: WebDriver, console: ConsoleServer) -> None:
    browser = signed_in
    for route, view in (("#/q/no-such-queue", "queue"), ("#/q/no-such-queue/c/tenant-a", "client")):
        visit(browser, console, route, view)
        wait_text(browser, "#not-found", "No queue named no-such-queue: QueueNotFound")
        forms = browser.find_elements(By.CSS_SELECTOR, "#view form, #view button, #delete-queue, #settings")
        assert not forms, [form.text for form in forms]


class SlowTarget(HttpTarget):
    """The API as a cold start or a restarted server answers it: every read a second late."""

    def list_queues(self) -> dict[str, Any]:
        time.sleep(1)
        return super().list_queues()

    def get_queue(self, name: str) -> dict[str, Any]:
        time.sleep(1)
        return super().get_queue(name)


def test_a_slow_api_shows_the_page_loading_not_empty(browser: WebDriver, api: HttpTarget) -> None:
    api.create_queue("slow", {})
    with ConsoleServer(SlowTarget(api.name)) as slow:
        browser.get(slow.url)
        until(browser, lambda d: d.find_elements(By.CSS_SELECTOR, '#view > [data-view="queues"]'), "the queues view")
        assert text_of(browser, "#status") == "Loading…"
        assert text_of(browser, "#count") == "Reading the list of queues…"
        wait_text(browser, "#count", "reading the figures of")
        wait_text(browser, "#status", "Updated")
        browser.get(f"{slow.origin}/#/q/slow")
        wait_text(browser, "#view .figures", "Reading the figures…")
        assert text_of(browser, "#status") == "Loading…"
        loaded(browser, "queue")
        wait_text(browser, "#status", "Updated")
    api.delete_queue("slow")
