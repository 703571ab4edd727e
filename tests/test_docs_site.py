"""The documentation site builds strictly, and its getting-started page renders in a browser.

The site is built with ``mkdocs build --strict`` (a broken link, a missing reference target or
a docstring griffe cannot read fails it) into a temporary folder and served on 127.0.0.1;
headless Chromium from Debian's packages, driven by its own chromedriver (nothing downloads a
browser), opens the getting-started page. The page's title, its code blocks and the site
navigation are checked in the DOM, and a screenshot is saved as an artefact
(``DIVE_ARTIFACTS``, default ``build/artifacts``).
"""

from __future__ import annotations

import functools
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webelement import WebElement

import dive

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = shutil.which("chromium")
CHROMEDRIVER = shutil.which("chromedriver")
ARTIFACTS = Path(os.environ.get("DIVE_ARTIFACTS", ROOT / "build" / "artifacts"))


def _need_browser() -> tuple[str, str]:
    if CHROMIUM and CHROMEDRIVER:
        return CHROMIUM, CHROMEDRIVER
    if os.environ.get("CI"):
        pytest.fail("chromium and chromedriver are missing: `make test` installs them")
    pytest.skip("chromium and chromium-driver are not installed (`make test` installs them)")


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    out = tmp_path_factory.mktemp("site")
    proc = subprocess.run(
        [sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
        cwd=ROOT,
        env={**os.environ, "NO_MKDOCS_2_WARNING": "1"},
        capture_output=True,
        text=True,
        timeout=600,
        check=False,
    )
    assert proc.returncode == 0, proc.stderr[-4000:]
    return out


@pytest.fixture(scope="module")
def served(site: Path) -> Iterator[str]:
    class Quiet(SimpleHTTPRequestHandler):
        def log_message(self, format: str, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Quiet, directory=site))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()
        thread.join()


@pytest.fixture
def browser(tmp_path: Path) -> Iterator[webdriver.Chrome]:
    chromium, chromedriver = _need_browser()
    options = webdriver.ChromeOptions()
    options.binary_location = chromium
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-quic",
        "--no-first-run",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--window-size=1280,1600",
        f"--user-data-dir={tmp_path / 'profile'}",
    ):
        options.add_argument(flag)
    driver = webdriver.Chrome(options=options, service=Service(executable_path=chromedriver))
    try:
        yield driver
    finally:
        driver.quit()


def _text(element: WebElement) -> str:
    return (element.get_attribute("textContent") or "").strip()


def test_the_site_has_a_page_per_topic_and_an_api_reference(site: Path) -> None:
    for page in ("getting-started", "agents", "turns", "errors", "testing", "reference/agent"):
        assert (site / page / "index.html").is_file(), page
    reference = (site / "reference" / "agent" / "index.html").read_text()
    assert 'id="dive.agent.Agent"' in reference
    assert 'id="dive.agent.Agent.run"' in reference


def test_every_top_level_name_is_in_the_reference_index() -> None:
    index = (ROOT / "docs" / "reference" / "index.md").read_text()
    for name in dive.__all__:
        assert f"`{name}`" in index, name


def test_getting_started_renders_with_code_and_navigation(
    served: str, browser: webdriver.Chrome
) -> None:
    browser.get(f"{served}/getting-started/")
    assert browser.title.startswith("Getting started - dive")
    heading = browser.find_element(By.CSS_SELECTOR, "article h1")
    assert heading.text.strip() == "Getting started"

    blocks = browser.find_elements(By.CSS_SELECTOR, "article div.highlight pre code")
    assert len(blocks) >= 6
    first_python = next(b for b in blocks if "ScriptedModel" in b.text)
    assert "agent.run_sync" in first_python.text
    assert first_python.find_elements(By.CSS_SELECTOR, "span.kn")  # highlighted keywords

    nav = browser.find_element(By.CSS_SELECTOR, "nav.md-nav--primary")
    labels = {_text(a) for a in nav.find_elements(By.TAG_NAME, "a")}
    for expected in ("Getting started", "Agents and tools", "The turn contract", "API reference"):
        assert any(label.startswith(expected) for label in labels), (expected, labels)
    active = nav.find_element(By.CSS_SELECTOR, "a.md-nav__link--active")
    assert _text(active) == "Getting started"

    ARTIFACTS.mkdir(parents=True, exist_ok=True)
    shot = ARTIFACTS / "docs-getting-started.png"
    shot.write_bytes(browser.get_screenshot_as_png())
    assert shot.stat().st_size > 10_000


def test_a_reference_page_renders_signatures(served: str, browser: webdriver.Chrome) -> None:
    browser.get(f"{served}/reference/agent/")
    run = browser.find_element(By.ID, "dive.agent.Agent.run")
    assert "run" in run.text
    assert browser.find_elements(By.CSS_SELECTOR, "div.doc-signature")
