"""How long the console's queues page takes with 1,000 queues on a local server, in headless Chromium.

Not a test (creating 1,000 queues on the embedded moto takes minutes): run it by hand,
`.venv/bin/python -m tests.console.queues_page_timing`. It prints the time from navigating to the queues page
until its list and the first page's figures are on screen, for a navigation within the page and for a fresh load.
"""

from __future__ import annotations

import io
import shutil
import statistics
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.support.ui import WebDriverWait

from dq.console import ConsoleServer
from dq.local_server import LocalServer
from dq.targets import HttpTarget, TargetError
from tests.console.conftest import CHROMEDRIVER, CHROMIUM, CHROMIUM_FLAGS

QUEUES = 1000
LOADED = '#view > [data-view="queues"][data-loaded="true"]'
FIGURES = '#view > [data-view="queues"][data-figures="complete"]'


def create(api: HttpTarget, index: int) -> None:
    for _ in range(5):
        try:
            api.create_queue(f"queue-{index:04d}", {})
            return
        except TargetError:
            time.sleep(1)  # a busy machine can time the function out: the create is idempotent


def timed(driver: Any, url: str, blank_first: bool) -> tuple[float, float]:
    """Seconds until the list of every queue is on screen, and until the first page's figures are."""
    if blank_first:
        driver.get("about:blank")
    started = time.monotonic()
    driver.get(url)
    WebDriverWait(driver, 60, poll_frequency=0.02).until(lambda d: d.find_elements(By.CSS_SELECTOR, LOADED))
    listed = time.monotonic() - started
    WebDriverWait(driver, 300, poll_frequency=0.05).until(lambda d: d.find_elements(By.CSS_SELECTOR, FIGURES))
    return listed, time.monotonic() - started


def main() -> None:
    with LocalServer(port=0, table="timing", sweep_interval=0, log=io.StringIO()) as local:
        api = HttpTarget(local.url)
        started = time.monotonic()
        with ThreadPoolExecutor(4) as pool:
            list(pool.map(lambda index: create(api, index), range(QUEUES)))
        for index in range(0, QUEUES, 50):
            api.send(f"queue-{index:04d}", "tenant", {"body": "x"})
        print(f"{QUEUES} queues created in {time.monotonic() - started:.0f} s", flush=True)
        profile = tempfile.mkdtemp(prefix="dq-console-timing-")
        options = webdriver.ChromeOptions()
        options.binary_location = str(CHROMIUM)
        for flag in (*CHROMIUM_FLAGS, f"--user-data-dir={profile}"):
            options.add_argument(flag)
        with ConsoleServer(HttpTarget(local.url)) as console:
            driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
            try:
                driver.get(console.url)
                WebDriverWait(driver, 300).until(lambda d: d.find_elements(By.CSS_SELECTOR, FIGURES))
                within = []
                for _ in range(3):
                    driver.get(f"{console.origin}/#/create")
                    WebDriverWait(driver, 60).until(lambda d: d.find_elements(By.CSS_SELECTOR, '[data-view="create"]'))
                    within.append(timed(driver, f"{console.origin}/#/", blank_first=False))
                    print(f"within the page: list {within[-1][0]:.3f} s, figures {within[-1][1]:.3f} s", flush=True)
                fresh = []
                for _ in range(3):
                    fresh.append(timed(driver, f"{console.origin}/#/", blank_first=True))
                    print(f"fresh load: list {fresh[-1][0]:.3f} s, figures {fresh[-1][1]:.3f} s", flush=True)
                shown = driver.find_element(By.ID, "count").text
                listing = []
                for _ in range(3):
                    begun = time.monotonic()
                    api.list_queues()
                    listing.append(time.monotonic() - begun)
                    print(f"GET /queues: {listing[-1]:.3f} s", flush=True)
            finally:
                driver.quit()
                shutil.rmtree(profile, ignore_errors=True)
        print(shown)
        for name, times in (
            ("list on screen, within the page", [t[0] for t in within]),
            ("list on screen, fresh load", [t[0] for t in fresh]),
            ("first 50 queues' figures on screen, within the page", [t[1] for t in within]),
            ("first 50 queues' figures on screen, fresh load", [t[1] for t in fresh]),
            ("GET /queues alone (1,000 queues)", listing),
        ):
            print(f"{name}: median {statistics.median(times):.3f} s, max {max(times):.3f} s")


if __name__ == "__main__":
    main()
