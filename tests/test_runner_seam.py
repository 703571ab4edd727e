"""The loop's one I/O seam: every effect of a turn goes through its ``Runner``.

The turn-contract property test runs through a recording runner while a profiler watches
every effect a turn can have: the model (``stream``, ``generate``, ``count_tokens``), tools,
the session store, the wall and monotonic clocks, new ids, randomness and sleeps. Each such
call is traced back through the frames that made it: lower layers (``dive.turns``,
``dive.messages``, the store itself…) are looked through, and the first frame of the loop
(``dive.agent``) must be the runner's. Anything else is an effect that bypassed the seam, and
a durable runner (effects as activities, decisions replayed) could not supply it.
"""

from __future__ import annotations

import asyncio
import random
import secrets
import sys
import time
import types
import uuid
from collections import Counter
from collections.abc import Callable, Sequence
from datetime import datetime
from typing import Any

from hypothesis import given, settings

from dive.agent import (
    Agent,
    InProcessRunner,
    ModelCall,
    Runner,
    ToolOutcome,
    ToolTask,
    UsageLimits,
)
from dive.agent._runner import Deliver
from dive.llm import ModelResponse, ResponseAccumulator
from dive.sessions import MemorySessionStore, Session, SessionSnapshot
from dive.testing import ScriptedModel, call, text, tool_use
from dive.testing.session_conformance import turn
from dive.tools import FunctionTool, Tool, ToolContext, Toolset, tool
from dive.turns import Turn
from tests import test_turn_property as prop
from tests._stores import CopyingStore

RUNNER_MODULE = "dive.agent._runner"


class RecordingRunner(InProcessRunner):
    """The in-process runner, noting every effect it carries."""

    def __init__(self) -> None:
        self.effects: Counter[str] = Counter()

    async def call_model(
        self, call: ModelCall, into: ResponseAccumulator, deliver: Deliver | None
    ) -> ModelResponse:
        self.effects["call_model"] += 1
        return await super().call_model(call, into, deliver)

    async def count_tokens(self, call: ModelCall) -> int:
        self.effects["count_tokens"] += 1
        return await super().count_tokens(call)

    async def call_tool(self, task: ToolTask) -> ToolOutcome:
        self.effects["call_tool"] += 1
        return await super().call_tool(task)

    async def list_tools(self, toolset: Toolset, context: ToolContext) -> Sequence[Tool]:
        self.effects["list_tools"] += 1
        return await super().list_tools(toolset, context)

    async def load(self, session: Session) -> SessionSnapshot:
        self.effects["load"] += 1
        return await super().load(session)

    async def load_turns(self, session: Session) -> list[Turn]:
        self.effects["load_turns"] += 1
        return await super().load_turns(session)

    async def write(self, session: Session, turn: Turn, *, expected_revision: int) -> int:
        self.effects["write"] += 1
        return await super().write(session, turn, expected_revision=expected_revision)

    def now(self) -> datetime:
        self.effects["now"] += 1
        return super().now()

    def new_turn_id(self) -> str:
        self.effects["new_turn_id"] += 1
        return super().new_turn_id()


def _codes(*fns: Callable[..., Any]) -> set[types.CodeType]:
    return {f.__code__ for f in fns}


# Python-level effects, by code object: the model, tools, the store, ids, randomness and
# sleeps (``random``'s module functions are methods of one ``random.Random``).
WATCHED_CODE = _codes(
    ScriptedModel.stream,
    ScriptedModel.generate,
    FunctionTool.call,
    MemorySessionStore.load,
    MemorySessionStore.checkpoint,
    MemorySessionStore.turns,
    MemorySessionStore.claim,
    MemorySessionStore.renew_claim,
    MemorySessionStore.release_claim,
    CopyingStore.checkpoint,
    secrets.token_hex,
    uuid.uuid4,
    asyncio.sleep,
    random.Random.uniform,
    random.Random.randint,
    random.Random.choice,
)
# Building an agent (its per-agent prompt-cache key is random) is configuration, not a turn.
CONFIGURATION = _codes(Agent.__init__)
# C-level effects: the clocks.
WATCHED_BUILTINS = {time.monotonic, time.time, time.perf_counter}


def _is_clock(fn: object) -> bool:
    return fn in WATCHED_BUILTINS or (
        getattr(fn, "__name__", None) in ("now", "utcnow", "today")
        and isinstance(getattr(fn, "__self__", None), type)
        and issubclass(getattr(fn, "__self__"), datetime)  # noqa: B009
    )


# Where a task was created (the frame, and the task that created it): an effect inside a task
# is traced back through the code that started the task, not only the frames above it.
_CREATED: dict[asyncio.Task[Any], tuple[types.FrameType, asyncio.Task[Any] | None]] = {}
_HANDLE_RUN = asyncio.events.Handle._run.__code__  # pyright: ignore[reportPrivateUsage]


def _task_factory(loop: asyncio.AbstractEventLoop, coro: Any, **kwargs: Any) -> asyncio.Task[Any]:
    task = asyncio.Task(coro, loop=loop, **kwargs)
    _CREATED[task] = (sys._getframe(1), asyncio.current_task(loop))  # pyright: ignore[reportPrivateUsage]
    return task


def _through_the_seam(frame: types.FrameType | None) -> bool:
    """False when the first ``dive.agent`` frame that caused the effect is not the runner's."""
    task = asyncio.current_task() if _loop_running() else None
    while frame is not None:
        if frame.f_code is _HANDLE_RUN:  # the event loop stepping a task: who created it?
            found = _CREATED.get(task) if task is not None else None
            if found is None:
                return True
            frame, task = found
            continue
        module = frame.f_globals.get("__name__", "")
        if module == RUNNER_MODULE:
            return True
        if module.startswith("dive.agent"):
            return frame.f_code in CONFIGURATION  # building an agent is not running a turn
        if not module.startswith(("dive.", "asyncio")):
            return True  # test code, a tool's own body: not the loop's effect
        frame = frame.f_back  # a lower layer (turns, sessions, asyncio…): who called it?
    return True


def _loop_running() -> bool:
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        return False
    return True


class Bypasses:
    """A profiler collecting effects that did not go through the runner."""

    def __init__(self) -> None:
        self.found: list[str] = []
        self._entered: set[types.FrameType] = set()  # a coroutine resumed is not a new call

    def __call__(self, frame: types.FrameType, event: str, arg: object) -> None:
        if event == "call" and frame.f_code in WATCHED_CODE:
            if frame in self._entered:
                return
            self._entered.add(frame)
            if not _through_the_seam(frame.f_back):
                self.found.append(_where(frame.f_code.co_qualname, frame.f_back))
        elif event == "c_call" and _is_clock(arg):
            module = frame.f_globals.get("__name__", "")
            if not module.startswith("asyncio") and not _through_the_seam(frame):
                # the event loop's own clock (timers, timeouts) belongs to the event loop
                self.found.append(_where(getattr(arg, "__qualname__", repr(arg)), frame))

    def __enter__(self) -> Bypasses:
        if _loop_running():
            asyncio.get_running_loop().set_task_factory(_task_factory)
        sys.setprofile(self)
        return self

    def __exit__(self, *exc: object) -> None:
        sys.setprofile(None)
        _CREATED.clear()


def _where(what: str, frame: types.FrameType | None) -> str:
    chain: list[str] = []
    while frame is not None and len(chain) < 4:
        chain.append(f"{frame.f_globals.get('__name__')}:{frame.f_code.co_name}")
        frame = frame.f_back
    return f"{what} from {' <- '.join(chain)}"


def test_the_watch_catches_an_effect_that_bypasses_the_runner() -> None:
    """The detector itself: loop code reading the clock, writing the store (also from a task
    it started) and sleeping is caught; the same effects made by the runner are not."""
    fake_loop_code = compile(
        "import asyncio, datetime\n"
        "def stamp():\n"
        "    return datetime.datetime.now()\n"
        "async def write(store, turn):\n"
        "    return await store.checkpoint('s', turn, expected_revision=0)\n"
        "async def spawn(store, turn):\n"
        "    return await asyncio.ensure_future(store.checkpoint('t', turn, expected_revision=0))\n"
        "async def nap():\n"
        "    await asyncio.sleep(0)\n",
        "<loop>",
        "exec",
    )
    loop: dict[str, Any] = {"__name__": "dive.agent._pretend"}
    exec(fake_loop_code, loop)
    store = MemorySessionStore()
    runner = InProcessRunner()

    async def bypassing() -> list[str]:
        with Bypasses() as watch:
            loop["stamp"]()
            await loop["write"](store, turn("running"))
            await loop["spawn"](store, turn("running"))
            await loop["nap"]()
        return watch.found

    found = Counter(f.split(" from ")[0] for f in asyncio.run(bypassing()))
    assert found["datetime.now"] == 1, found
    assert found["MemorySessionStore.checkpoint"] == 2, found  # the spawned write included
    assert found["sleep"] == 1, found

    async def through() -> list[str]:
        with Bypasses() as watch:
            runner.now()
            await asyncio.ensure_future(runner.load(store.session("s")))
            await runner.sleep(0)
        return watch.found

    assert asyncio.run(through()) == []


@settings(max_examples=40, deadline=None)
@given(prop.scenarios())
def test_every_effect_of_the_turn_contract_goes_through_the_runner(case: prop.Case) -> None:
    runner = RecordingRunner()

    async def main() -> None:
        with Bypasses() as watch:
            await prop.scenario(case, runner)
        assert watch.found == [], "\n".join(watch.found)

    asyncio.run(main())
    assert runner.effects["call_model"] >= 1
    assert runner.effects["load"] >= 1
    assert runner.effects["write"] >= 1
    assert runner.effects["new_turn_id"] >= 1
    assert runner.effects["now"] >= 1


def test_toolsets_budgets_claims_and_retries_go_through_the_runner() -> None:
    """The effects the property test does not reach: toolset listing, token counting,
    session usage, claims (renewed while the turn runs), and a retried tool's sleep."""
    from dive.agent import Durability
    from dive.messages import ToolRetryPolicy

    attempts: list[int] = []

    @tool(idempotent=True, retry_policy=ToolRetryPolicy(max_attempts=2, backoff=0.001))
    async def flaky(ctx: ToolContext) -> str:
        """Fails once."""
        attempts.append(ctx.attempt)
        await asyncio.sleep(0.03)  # long enough for a claim renewal (ttl / 3)
        if len(attempts) == 1:
            raise RuntimeError("once")
        return "ok"

    class Listed:
        name = "listed"

        async def tools(self, ctx: ToolContext) -> Sequence[Tool]:
            return [flaky]

    class Counting(ScriptedModel):
        async def count_tokens(self, request: object) -> int:
            return 1

    store = MemorySessionStore()
    agent = Agent(
        model=Counting([tool_use(call("flaky", {})), text("done")]),
        toolsets=[Listed()],
        session=store.session("s"),
        session_usage_limits=UsageLimits(input_tokens=10_000, count_tokens_first=True),
        durability=Durability(checkpoint_steps=True, claim=True, claim_ttl=0.05),
    )
    runner = RecordingRunner()

    async def main() -> None:
        with Bypasses() as watch:
            result = await agent.run("go", runner=runner)
        assert result.status == "completed", result.outcome
        assert watch.found == [], "\n".join(watch.found)

    asyncio.run(main())
    assert attempts == [1, 2]
    for effect in ("list_tools", "count_tokens", "load_turns", "call_tool", "write"):
        assert runner.effects[effect] >= 1, effect


def test_a_runner_supplies_the_clock_and_the_ids() -> None:
    """What the runner says the time is and what ids it draws is what the records hold."""
    from datetime import UTC

    fixed = datetime(2030, 1, 2, 3, 4, 5, tzinfo=UTC)

    class Fixed(InProcessRunner):
        def now(self) -> datetime:
            return fixed

        def new_turn_id(self) -> str:
            return "turn_from_the_runner"

    runner: Runner = Fixed()
    store = MemorySessionStore()
    agent = Agent(model=ScriptedModel([text("hi")]), session=store.session("s"))
    result = agent.run_sync("hello", runner=runner)
    assert result.turn.id == "turn_from_the_runner"
    assert result.turn.created_at == fixed
    assert result.turn.finished_at == fixed
    assert {m.created_at for m in result.turn.messages} == {fixed}
