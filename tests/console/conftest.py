"""The console against a real local server (embedded moto behind the deployed handlers), in the distribution's
headless Chromium driven by Selenium through the distribution's chromedriver (never a downloaded one)."""

from __future__ import annotations

import io
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from dq.console import ConsoleServer
from dq.local_server import LocalServer
from dq.targets import HttpTarget

REPO = Path(__file__).resolve().parents[2]
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
AXE = REPO / "node_modules" / "axe-core" / "axe.min.js"
SCREENSHOTS = REPO / "docs" / "img" / "console"
CHROMIUM_FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,1000",
)


@pytest.fixture(scope="session")
def local() -> Iterator[LocalServer]:
    with LocalServer(port=0, table="console", sweep_interval=0, log=io.StringIO()) as server:
        yield server


@pytest.fixture(scope="session")
def api(local: LocalServer) -> HttpTarget:
    """The same client `dq` uses, for checking what the console did."""
    return HttpTarget(local.url)


@pytest.fixture(scope="session")
def console(api: HttpTarget) -> Iterator[ConsoleServer]:
    with ConsoleServer(HttpTarget(api.name)) as running:
        yield running


@pytest.fixture(scope="session")
def browser() -> Iterator[Any]:
    """One Chromium for every browser test, with a fresh profile."""
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    assert CHROMIUM.exists() and CHROMEDRIVER.exists(), "Chromium is missing: `make browser` installs it"
    profile = tempfile.mkdtemp(prefix="dq-console-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in CHROMIUM_FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={profile}")
    # The service names the driver, so Selenium Manager never runs (it would try to download one).
    driver = webdriver.Chrome(service=Service(executable_path=str(CHROMEDRIVER)), options=options)
    driver.set_page_load_timeout(30)
    try:
        yield driver
    finally:
        driver.quit()
        shutil.rmtree(profile, ignore_errors=True)
