"""The viewer in a real browser: Debian's headless Chromium driven by Selenium.

Chromium and chromedriver come from Debian packages (``scripts/services.sh`` installs them;
nothing downloads a browser). The server is the real one (uvicorn, SQLite store). Every test
saves a screenshot under ``tmp/artefacts/viewer/`` (``DIVE_TEST_ARTEFACTS`` overrides it).
"""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
import tempfile
import time
import urllib.error
import urllib.request
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("selenium")

from selenium import webdriver
from selenium.webdriver.chrome.service import Service
from selenium.webdriver.common.by import By
from selenium.webdriver.remote.webdriver import WebDriver
from selenium.webdriver.remote.webelement import WebElement

from dive.sessions import SQLiteSessionStore
from dive.turns import Turn
from tests._viewer import SENT, RunningViewer, agent_for, seed

ROOT = Path(__file__).resolve().parent.parent
CHROMIUM = Path("/usr/bin/chromium")
CHROMEDRIVER = Path("/usr/bin/chromedriver")
ARTEFACTS = Path(os.environ.get("DIVE_TEST_ARTEFACTS", ROOT / "tmp" / "artefacts")) / "viewer"
FLAGS = (
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-dev-shm-usage",
    "--window-size=1280,1400",
)


def _need_chromium() -> None:
    if CHROMIUM.exists() and CHROMEDRIVER.exists():
        return
    if os.environ.get("CI"):
        pytest.fail("chromium/chromedriver missing: `make test` installs them in CI")
    pytest.skip("chromium and chromium-driver are not installed (scripts/services.sh up)")


@pytest.fixture
def downloads(tmp_path: Path) -> Path:
    path = tmp_path / "downloads"
    path.mkdir()
    return path


@pytest.fixture
def browser(tmp_path: Path, downloads: Path) -> Iterator[WebDriver]:
    _need_chromium()
    options = webdriver.ChromeOptions()
    options.binary_location = str(CHROMIUM)
    for flag in FLAGS:
        options.add_argument(flag)
    options.add_argument(f"--user-data-dir={tempfile.mkdtemp(dir=tmp_path)}")
    untyped: Any = options  # selenium's annotations are partly missing
    untyped.add_experimental_option(
        "prefs",
        {"download.default_directory": str(downloads), "download.prompt_for_download": False},
    )
    driver = webdriver.Chrome(options=options, service=Service(executable_path=str(CHROMEDRIVER)))
    driver.set_page_load_timeout(60)
    any_driver: Any = driver
    any_driver.execute_cdp_cmd(  # headless Chromium saves downloads only when told where
        "Page.setDownloadBehavior", {"behavior": "allow", "downloadPath": str(downloads)}
    )
    try:
        yield driver
    finally:
        driver.quit()


@pytest.fixture
def viewer(tmp_path: Path) -> Iterator[RunningViewer]:
    async def make() -> SQLiteSessionStore:
        store = SQLiteSessionStore(tmp_path / "sessions.db")
        await seed(store)
        return store

    holder: dict[str, Any] = {}

    def factory(session_id: str) -> Any:
        return agent_for(holder["viewer"].store, session_id)

    with RunningViewer(make, agent_factory=factory) as running:
        holder["viewer"] = running
        yield running


def _shot(driver: WebDriver, name: str) -> Path:
    ARTEFACTS.mkdir(parents=True, exist_ok=True)
    path = ARTEFACTS / f"{name}.png"
    untyped: Any = driver
    untyped.save_screenshot(str(path))
    return path


def _eventually(check: Callable[[], Any], what: str) -> Any:
    for _ in range(300):  # bounded wait for work done by the server's loop
        found = check()
        if found:
            return found
        time.sleep(0.1)
    raise AssertionError(f"never happened: {what}")


def _turns(viewer: RunningViewer, session_id: str) -> list[Turn]:
    assert viewer.store is not None
    return viewer.call(viewer.store.turns(session_id))


def _button(scope: WebDriver | WebElement, name: str) -> WebElement:
    [button] = [b for b in scope.find_elements(By.TAG_NAME, "button") if b.accessible_name == name]
    return button


def test_the_list_shows_the_seeded_sessions(browser: WebDriver, viewer: RunningViewer) -> None:
    browser.get(viewer.url)
    rows = browser.find_elements(By.CSS_SELECTOR, "table.sessions tbody tr")
    shown = {str(r.get_attribute("data-session")): r.text for r in rows}
    assert sorted(shown) == ["asking", "broken", "charged", "done", "mixed", "waiting"]
    assert "provider_error" in shown["broken"]
    assert "incomplete" in shown["broken"]
    assert "suspended" in shown["waiting"]
    assert browser.find_element(By.LINK_TEXT, "Inbox").get_attribute("href") == (
        f"{viewer.base}/inbox"
    )
    _shot(browser, "sessions")


def test_a_session_page_shows_completed_incomplete_and_suspended_turns(
    browser: WebDriver, viewer: RunningViewer
) -> None:
    browser.get(viewer.url)
    browser.find_element(By.LINK_TEXT, "mixed").click()
    turns = browser.find_elements(By.CSS_SELECTOR, "li.turn")
    assert [t.get_attribute("class") for t in turns] == [
        "turn status-completed",
        "turn status-incomplete",
        "turn status-suspended",
    ]
    completed, incomplete, suspended = (t.text for t in turns)
    assert "completed" in completed
    assert "provider_error" in incomplete  # the reason, as recorded
    assert "next: continue" in incomplete  # the advice
    assert "overloaded (529)" in incomplete
    assert "suspended" in suspended
    assert "waiting" in suspended  # the held call's state
    assert _button(browser, "Approve").is_displayed()
    assert _button(browser, "Deny").is_displayed()
    assert browser.find_element(By.CSS_SELECTOR, "svg.chart").is_displayed()
    _shot(browser, "session")


def test_approving_from_the_inbox_resumes_and_completes_the_turn(
    browser: WebDriver, viewer: RunningViewer
) -> None:
    SENT.clear()
    browser.get(viewer.url)
    browser.find_element(By.LINK_TEXT, "Inbox").click()
    _shot(browser, "inbox")
    wait = browser.find_element(By.XPATH, "//div[@class='wait'][.//a[text()='waiting']]")
    assert "send_email" in wait.text
    _button(wait, "Approve").click()  # one click, no confirmation step
    turns = _eventually(
        lambda: (t := _turns(viewer, "waiting")) and t[-1].status == "completed" and t,
        "the approved turn completed",
    )
    assert SENT == ["ada@example.com"]
    assert turns[-1].messages[-1].text == "The email is on its way."
    [record] = turns[-1].tool_calls
    assert (record.state, [a.decision for a in record.approvals]) == ("completed", ["ask", "allow"])


def test_answering_an_ask_user_question(browser: WebDriver, viewer: RunningViewer) -> None:
    browser.get(f"{viewer.base}/sessions/asking?token={viewer.token}")
    browser.find_element(By.XPATH, "//label[normalize-space()='blue']/input").click()
    _button(browser, "Answer").click()
    turns = _eventually(
        lambda: (t := _turns(viewer, "asking")) and t[-1].status == "completed" and t,
        "the answered turn completed",
    )
    results = [m.tool_result.text for m in turns[-1].messages if m.tool_result is not None]
    assert results == ["blue"]
    browser.get(f"{viewer.base}/sessions/asking")
    _eventually(lambda: "Blue it is." in browser.page_source, "the page shows the answer")
    _shot(browser, "answered")


def test_a_request_without_the_token_is_refused(browser: WebDriver, viewer: RunningViewer) -> None:
    browser.get(f"{viewer.base}/")
    assert "Token required" in browser.page_source
    assert not browser.find_elements(By.CSS_SELECTOR, "table.sessions")
    with pytest.raises(urllib.error.HTTPError) as refused:
        urllib.request.urlopen(f"{viewer.base}/inbox", timeout=30)
    assert refused.value.code == 401
    refused.value.close()
    _shot(browser, "refused")


def test_the_exported_regression_test_runs_green(
    browser: WebDriver, viewer: RunningViewer, downloads: Path, tmp_path: Path
) -> None:
    browser.get(f"{viewer.base}/sessions/done?token={viewer.token}")
    browser.find_element(By.LINK_TEXT, "Export as regression test").click()
    [exported] = _eventually(
        lambda: [p for p in downloads.glob("test_*.py")], "the export downloaded"
    )
    target = tmp_path / "regression" / exported.name
    target.parent.mkdir()
    shutil.copy(exported, target)
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(target)],
        cwd=target.parent,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "1 passed" in ran.stdout


def test_a_page_updates_itself_while_another_process_writes(
    browser: WebDriver, viewer: RunningViewer
) -> None:
    browser.get(f"{viewer.base}/sessions/done?token={viewer.token}")
    assert len(browser.find_elements(By.CSS_SELECTOR, "li.turn")) == 1
    _eventually(lambda: browser.find_element(By.CSS_SELECTOR, ".live-status").text, "live")
    assert viewer.store is not None
    viewer.call(agent_for(viewer.store, "done", ["Again: 5."]).run("and again?"))
    _eventually(
        lambda: len(browser.find_elements(By.CSS_SELECTOR, "li.turn")) == 2,
        "the page showed the new turn without a reload",
    )
    assert browser.find_element(By.TAG_NAME, "body").get_attribute("data-updated")
    assert "Again: 5." in browser.find_element(By.TAG_NAME, "main").text


def test_every_form_control_has_an_accessible_name(
    browser: WebDriver, viewer: RunningViewer
) -> None:
    for path in ("/", "/inbox", "/sessions/mixed", "/sessions/asking"):
        browser.get(f"{viewer.base}{path}?token={viewer.token}")
        controls = [
            c
            for tag in ("input", "select", "textarea", "button")
            for c in browser.find_elements(By.TAG_NAME, tag)
            if c.get_attribute("type") != "hidden"
        ]
        assert controls, path
        unnamed = [c.get_attribute("outerHTML") for c in controls if not c.accessible_name]
        assert unnamed == [], path
