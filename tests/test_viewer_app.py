"""The viewer over HTTP: access, the pages' content, decisions, actions, export, live updates."""

from __future__ import annotations

import asyncio
import http.client
import re
import subprocess
import sys
import urllib.parse
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

pytest.importorskip("starlette")
pytest.importorskip("jinja2")

from starlette.testclient import TestClient

from dive.sessions import MemorySessionStore, SQLiteSessionStore
from dive.viewer import DECISION_KEY, app, apply_recorded_decisions, recorded_decisions
from dive.viewer._auth import csrf_token
from tests._viewer import SENT, RunningViewer, agent_for, seed

TOKEN = "test-token"
CSRF = csrf_token(TOKEN)


@pytest.fixture
def store() -> MemorySessionStore:
    seeded = MemorySessionStore()
    asyncio.run(seed(seeded))
    return seeded


@pytest.fixture
def client(store: MemorySessionStore) -> Iterator[TestClient]:
    with TestClient(app(store, token=TOKEN)) as c:
        c.get(f"/?token={TOKEN}")  # the cookie
        yield c


def _open_turn(store: MemorySessionStore, session_id: str) -> Any:
    return asyncio.run(store.load(session_id)).open_turn


def _pending(store: MemorySessionStore, session_id: str) -> tuple[str, str]:
    turn = _open_turn(store, session_id)
    return turn.id, turn.suspension.pending_tool_calls[0].id


def _decide(c: TestClient, session_id: str, turn_id: str, call_id: str, **fields: str) -> Any:
    data = {"csrf": CSRF, "turn_id": turn_id, "call_id": call_id, **fields}
    return c.post(f"/sessions/{session_id}/decide", data=data, follow_redirects=False)


# --- access ------------------------------------------------------------------------------------


def test_without_the_token_a_request_is_refused_not_redirected(store: MemorySessionStore) -> None:
    with TestClient(app(store, token=TOKEN)) as c:
        assert c.get("/", follow_redirects=False).status_code == 401
        assert c.get("/sessions/done", follow_redirects=False).status_code == 401
        assert c.get("/?token=nope", follow_redirects=False).status_code == 403
        bearer = c.get("/inbox", headers={"Authorization": f"Bearer {TOKEN}"})
        assert bearer.status_code == 200
        assert c.get("/inbox").status_code == 401  # a header authorises one request only
        first = c.get(f"/?token={TOKEN}")
        assert first.status_code == 200
        assert "HttpOnly" in first.headers["set-cookie"]
        assert "SameSite=Strict" in first.headers["set-cookie"]
        assert c.get("/inbox").status_code == 200  # the cookie keeps the pages authorised
        assert c.get("/static/viewer.css").status_code == 200


def test_a_generated_token_is_long_and_random(store: MemorySessionStore) -> None:
    a, b = app(store), app(store)
    assert a.state.viewer.token != b.state.viewer.token
    assert len(a.state.viewer.token) >= 32


def test_a_form_post_without_the_token_or_csrf_field_changes_nothing(
    store: MemorySessionStore, client: TestClient
) -> None:
    turn_id, call_id = _pending(store, "waiting")
    before = asyncio.run(store.load("waiting")).revision
    data = {"turn_id": turn_id, "call_id": call_id, "action": "approve"}
    with TestClient(app(store, token=TOKEN)) as anonymous:
        assert (
            anonymous.post("/sessions/waiting/decide", data={**data, "csrf": CSRF}).status_code
            == 401
        )
    assert client.post("/sessions/waiting/decide", data=data).status_code == 403  # no csrf
    cross = client.post(
        "/sessions/waiting/decide",
        data={**data, "csrf": CSRF},
        headers={"Origin": "http://evil.example"},
    )
    assert cross.status_code == 403
    assert client.post("/sessions/waiting/remove-last", data={}).status_code == 403
    assert asyncio.run(store.load("waiting")).revision == before
    assert recorded_decisions(_open_turn(store, "waiting")) == {}


# --- pages -------------------------------------------------------------------------------------


def _sessions(html: str) -> list[str]:
    return re.findall(r'<tr data-session="([^"]+)"', html)


def test_the_sessions_list_shows_each_session_and_filters(client: TestClient) -> None:
    html = client.get("/").text
    assert sorted(_sessions(html)) == ["asking", "broken", "charged", "done", "mixed", "waiting"]
    assert 'href="/inbox">Inbox</a>' in html
    assert sorted(_sessions(client.get("/?status=incomplete").text)) == ["broken", "charged"]
    assert _sessions(client.get("/?reason=provider_error").text) == ["broken"]
    suspended = _sessions(client.get("/?status=suspended").text)
    assert sorted(suspended) == ["asking", "mixed", "waiting"]
    assert _sessions(client.get("/?status=reconcile").text) == ["charged"]
    assert _sessions(client.get("/?q=ada@example").text) == ["waiting"]
    assert _sessions(client.get("/?q=GRACE").text) == ["mixed"]
    assert client.get("/?status=bogus").status_code == 400
    row = html.split('data-session="broken"')[1].split("</tr>")[0]
    assert ">incomplete<" in row
    assert ">provider_error<" in row
    assert ">2<" in row  # turns


def test_the_session_page_shows_states_reasons_next_steps_and_advice(client: TestClient) -> None:
    broken = client.get("/sessions/broken").text
    assert ">completed<" in broken
    assert ">incomplete<" in broken
    assert ">provider_error<" in broken
    assert "next: <span" in broken
    assert ">continue<" in broken
    assert "overloaded (529)" in broken
    assert "The previous turn stopped because the model provider returned an error" in broken
    charged = client.get("/sessions/charged").text
    assert ">unknown<" in charged
    assert ">reconcile<" in charged
    assert "may have reached another system" in charged
    waiting = client.get("/sessions/waiting").text
    assert ">suspended<" in waiting
    assert ">waiting<" in waiting  # the held call's recorded state
    assert ">Approve</button>" in waiting
    assert ">Deny</button>" in waiting
    done = client.get("/sessions/done").text
    assert "<svg" in done
    assert "Tokens and cost per turn" in done
    assert "Export as regression test" in done
    assert client.get("/sessions/nobody").status_code == 404


@pytest.mark.parametrize("path", ["/", "/inbox", "/sessions/mixed", "/sessions/charged"])
def test_pages_load_nothing_from_elsewhere(client: TestClient, path: str) -> None:
    html = client.get(path).text
    links = re.findall(r'(?:src|href)="([^"]*)"', html)
    assert links
    assert [u for u in links if not u.startswith(("/", "#"))] == []
    for asset in re.findall(r'(?:src|href)="(/static/[^"]*)"', html):
        assert client.get(asset).status_code == 200


def test_the_inbox_lists_every_wait_and_the_calls_to_reconcile(client: TestClient) -> None:
    html = client.get("/inbox").text
    assert "Approve calling" in html
    assert "send_email" in html
    assert "Which colour?" in html
    assert ">Answer</button>" in html
    assert "Needs reconciliation (1)" in html
    assert "charge_card" in html


def test_the_trace_view_has_a_bar_per_model_call_and_tool_call(
    store: MemorySessionStore, client: TestClient
) -> None:
    turn = asyncio.run(store.turns("done"))[0]
    html = client.get(f"/sessions/done/turns/{turn.id}/trace").text
    assert "model call 1" in html
    assert "model call 2" in html
    assert html.count('class="bar execute_tool"') == 1


# --- decisions ---------------------------------------------------------------------------------


def test_without_an_agent_a_decision_is_recorded_once_and_conflicts_are_refused(
    store: MemorySessionStore, client: TestClient
) -> None:
    turn_id, call_id = _pending(store, "waiting")
    first = _decide(client, "waiting", turn_id, call_id, action="approve", back="inbox")
    assert first.status_code == 303
    assert first.headers["location"].startswith("/inbox")
    revision = asyncio.run(store.load("waiting")).revision
    pending = _open_turn(store, "waiting").suspension.pending_tool_calls[0]
    assert pending.metadata[DECISION_KEY]["value"]["approved"] is True
    again = _decide(client, "waiting", turn_id, call_id, action="approve")
    assert again.status_code == 303  # the same decision again: nothing changes
    assert asyncio.run(store.load("waiting")).revision == revision
    other = _decide(client, "waiting", turn_id, call_id, action="deny")
    assert other.status_code == 409
    assert "different decision" in other.text
    assert "Decision recorded" in client.get("/inbox").text

    SENT.clear()
    owner = agent_for(store, "waiting")
    result = asyncio.run(apply_recorded_decisions(owner))
    assert result is not None
    assert result.turn.status == "completed"
    assert SENT == ["ada@example.com"]
    stale = _decide(client, "waiting", turn_id, call_id, action="approve")
    assert stale.status_code == 409


def test_with_an_agent_factory_approving_resumes_the_turn(store: MemorySessionStore) -> None:
    SENT.clear()
    web = app(store, token=TOKEN, agent_factory=lambda sid: agent_for(store, sid))
    turn_id, call_id = _pending(store, "waiting")
    with TestClient(web) as c:
        response = c.post(
            "/sessions/waiting/decide",
            data={"turn_id": turn_id, "call_id": call_id, "action": "approve"},
            headers={"Authorization": f"Bearer {TOKEN}"},  # an API client needs no csrf
            follow_redirects=False,
        )
        assert response.status_code == 303
        turns = _wait_for(c, store, "waiting", "completed")
    assert SENT == ["ada@example.com"]
    assert turns[-1].messages[-1].text == "The email is on its way."


def test_answering_an_ask_user_question_with_a_choice(store: MemorySessionStore) -> None:
    web = app(store, token=TOKEN, agent_factory=lambda sid: agent_for(store, sid))
    turn_id, call_id = _pending(store, "asking")
    with TestClient(web) as c:
        c.get(f"/?token={TOKEN}")
        assert _decide(c, "asking", turn_id, call_id, action="answer").status_code == 400
        assert (
            _decide(c, "asking", turn_id, call_id, action="answer", choice="blue").status_code
            == 303
        )
        turns = _wait_for(c, store, "asking", "completed")
    results = [m.tool_result for m in turns[-1].messages if m.tool_result is not None]
    assert [r.text for r in results] == ["blue"]


def _wait_for(c: TestClient, store: MemorySessionStore, session_id: str, status: str) -> Any:
    for _ in range(200):  # the resume runs as a task of the server's loop
        turns = asyncio.run(store.turns(session_id))
        if turns[-1].status == status:
            return turns
        c.get("/inbox", headers={"Authorization": f"Bearer {TOKEN}"})  # lets the loop run
    raise AssertionError(f"{session_id} never became {status}")


# --- actions -----------------------------------------------------------------------------------


def test_fork_from_a_turn_and_remove_the_last_turn(
    store: MemorySessionStore, client: TestClient
) -> None:
    first = asyncio.run(store.turns("broken"))[0]
    forked = client.post(
        "/sessions/broken/fork",
        data={"csrf": CSRF, "turn_id": first.id, "new_id": "broken-2"},
        follow_redirects=False,
    )
    assert forked.status_code == 303
    assert forked.headers["location"] == "/sessions/broken-2"
    assert [t.id for t in asyncio.run(store.turns("broken-2"))] == [first.id]
    revision = asyncio.run(store.load("broken")).revision
    stale = client.post("/sessions/broken/remove-last", data={"csrf": CSRF, "revision": "0"})
    assert stale.status_code == 409
    removed = client.post(
        "/sessions/broken/remove-last", data={"csrf": CSRF, "revision": str(revision)}
    )
    assert removed.status_code == 200  # followed back to the session page
    assert len(asyncio.run(store.turns("broken"))) == 1


@pytest.mark.parametrize("session_id", ["done", "broken", "waiting", "asking"])
def test_an_exported_turn_runs_green_under_pytest(
    session_id: str, client: TestClient, store: MemorySessionStore, tmp_path: Path
) -> None:
    turn = asyncio.run(store.turns(session_id))[-1]
    response = client.get(f"/sessions/{session_id}/turns/{turn.id}/export")
    assert response.status_code == 200
    name = re.search(r'filename="([^"]+)"', response.headers["content-disposition"])
    assert name is not None
    path = tmp_path / name.group(1)
    path.write_text(response.text)
    ran = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", str(path)],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        check=False,
        timeout=300,
    )
    assert ran.returncode == 0, ran.stdout + ran.stderr
    assert "1 passed" in ran.stdout


def test_an_export_that_cannot_replay_says_why(
    store: MemorySessionStore, client: TestClient
) -> None:
    turn = asyncio.run(store.turns("charged"))[-1]
    response = client.get(f"/sessions/charged/turns/{turn.id}/export")
    assert response.status_code == 400
    assert "canceled" in response.text
    assert "cannot reproduce" in response.text


# --- live updates over a real server -----------------------------------------------------------


def test_server_sent_events_report_a_change_to_the_session(tmp_path: Path) -> None:
    async def make() -> SQLiteSessionStore:
        store = SQLiteSessionStore(tmp_path / "s.db")
        await seed(store)
        return store

    with RunningViewer(make, token=TOKEN) as viewer:
        host, port = urllib.parse.urlsplit(viewer.base).netloc.split(":")
        conn = http.client.HTTPConnection(host, int(port), timeout=30)
        conn.request("GET", f"/events?session=done&token={TOKEN}")
        response = conn.getresponse()
        assert response.status == 200
        assert response.getheader("content-type", "").startswith("text/event-stream")
        assert response.readline() == b"retry: 2000\n"
        assert viewer.store is not None
        viewer.call(agent_for(viewer.store, "done", ["again"]).run("once more"))
        lines = [response.readline() for _ in range(3)]
        assert b"event: change\n" in lines
        conn.close()
