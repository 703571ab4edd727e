"""A command's process tree: its output read on the event loop, and the kill on timeout.

:class:`Output` reads the merged stdout/stderr pipe as it arrives into a bounded head and
tail. :func:`terminate` kills the tree: the command leads a new session and process group, so
the group gets ``SIGTERM`` and, on Linux, every process of the session too (found through
``/proc/<pid>/stat`` in a worker thread, never on the event loop: jobs that ``set -m`` moved
into groups of their own are found by the session id); ``SIGKILL`` follows after a grace
period. :func:`kill_in_background` does the same for a cancelled call without delaying the
cancellation. Where there is no ``/proc`` only the group is signalled.
"""

from __future__ import annotations

import asyncio
import codecs
import os
import signal
from collections import deque

__all__ = ["Output", "kill_in_background", "terminate"]

_POLL = 0.05
_READ_SIZE = 65536
_background: set[asyncio.Task[None]] = set()


class Output:
    """Reads a pipe on the event loop into a bounded head and tail (characters)."""

    def __init__(self, fd: int, cap: int) -> None:
        self._fd = fd
        self._loop = asyncio.get_running_loop()
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")
        self._head: list[str] = []
        self._head_room = cap // 2
        self._tail: deque[str] = deque()
        self._tail_len = 0
        self._tail_cap = cap - cap // 2
        self._stream_room = cap
        self.pending: list[str] = []  # text not yet streamed to the context
        self.total = 0
        self.closed = asyncio.Event()
        self.changed = asyncio.Event()
        os.set_blocking(fd, False)
        self._loop.add_reader(fd, self._readable)

    def _readable(self) -> None:
        try:
            data = os.read(self._fd, _READ_SIZE)
        except BlockingIOError:
            return
        except OSError:
            data = b""
        if not data:
            self._take(self._decoder.decode(b"", final=True))
            self.close()
            return
        self._take(self._decoder.decode(data))

    def _take(self, text: str) -> None:
        if not text:
            return
        self.total += len(text)
        if self._stream_room > 0:
            self.pending.append(text[: self._stream_room])
            self._stream_room -= len(self.pending[-1])
            self.changed.set()
        if self._head_room > 0:
            self._head.append(text[: self._head_room])
            self._head_room -= len(self._head[-1])
            text = text[len(self._head[-1]) :]
        if not text:
            return
        self._tail.append(text)
        self._tail_len += len(text)
        while self._tail_len > self._tail_cap:
            extra = self._tail_len - self._tail_cap
            first = self._tail[0]
            if len(first) <= extra:
                self._tail.popleft()
                self._tail_len -= len(first)
            else:
                self._tail[0] = first[extra:]
                self._tail_len -= extra

    def close(self) -> None:
        if self.closed.is_set():
            return
        self._loop.remove_reader(self._fd)
        os.close(self._fd)
        self.closed.set()
        self.changed.set()

    def text(self, cap: int) -> str:
        head, tail = "".join(self._head), "".join(self._tail)
        cut = self.total - len(head) - len(tail)
        if cut <= 0:
            return head + tail
        return (
            f"{head}\n\n[… {cut:,} characters of output truncated here: the output was "
            f"{self.total:,} characters and is capped at {cap:,} …]\n\n{tail}"
        )


def _signal_group(pgid: int, sig: signal.Signals) -> None:
    try:
        os.killpg(pgid, sig)
    except (ProcessLookupError, PermissionError):
        pass


def _scan_session(leader: int, sig: signal.Signals | None) -> bool | None:
    """Whether a process of ``leader``'s session or group is alive; ``sig`` is sent to each.

    The call's shell leads its own session (``start_new_session=True``), so its pid is the
    session id of everything it started, including jobs that ``set -m`` moved into process
    groups of their own. The session is read from field 6 of ``/proc/<pid>/stat`` (parsed
    after the last ``)``, since the command name may hold one); zombies waiting to be reaped
    don't count. Returns None where there is no ``/proc`` (not Linux): then only the group
    can be found. This reads every ``/proc/<pid>/stat``, so it runs in a worker thread.
    """
    try:
        names = os.listdir("/proc")
    except OSError:
        return None
    wanted = str(leader).encode()
    alive = False
    for name in names:
        if not name.isdigit():
            continue
        try:
            with open(f"/proc/{name}/stat", "rb") as f:
                fields = f.read().rsplit(b")", 1)[-1].split()
        except OSError:
            continue
        if len(fields) < 4 or fields[0] in (b"Z", b"X") or wanted not in (fields[2], fields[3]):
            continue
        alive = True
        if sig is not None:
            try:
                os.kill(int(name), sig)
            except (ProcessLookupError, PermissionError):
                pass
    return alive


async def _signal_tree(leader: int, sig: signal.Signals | None, *, group: bool = True) -> bool:
    """Signal the group (if ``group``) and every live process of the session; True if any is.

    The session scan runs in a worker thread (it also sends the signals, so a cancelled
    caller still kills). Without ``/proc`` only the group is signalled and checked.
    """
    if group and sig is not None:
        _signal_group(leader, sig)
    alive = await asyncio.to_thread(_scan_session, leader, sig)
    if alive is not None:
        return alive
    try:
        os.killpg(leader, 0)
    except (ProcessLookupError, PermissionError):
        return False
    return True


async def terminate(
    proc: asyncio.subprocess.Process, output: Output, grace: float, *, term: bool = True
) -> None:
    """``SIGTERM`` the tree, ``SIGKILL`` it after ``grace`` seconds, reap the shell.

    The tree is the shell's process group and, on Linux, every process of its session. With
    ``term=False`` the group has had its ``SIGTERM`` already; the rest of the session gets it.
    """
    leader = proc.pid
    loop = asyncio.get_running_loop()
    try:
        alive = await _signal_tree(leader, signal.SIGTERM, group=term)
        deadline = loop.time() + grace
        while alive and loop.time() < deadline:
            await asyncio.sleep(_POLL)
            alive = await _signal_tree(leader, None)
    finally:
        _signal_group(leader, signal.SIGKILL)
        try:
            await _signal_tree(leader, signal.SIGKILL, group=False)
            await proc.wait()
            try:
                async with asyncio.timeout(grace):
                    await output.closed.wait()
            except TimeoutError:
                pass  # a process that left the session still holds the pipe: stop reading
        finally:
            output.close()


def kill_in_background(proc: asyncio.subprocess.Process, output: Output, grace: float) -> None:
    """For a cancelled call: ``SIGTERM`` the group now, the rest without delaying the cancel."""
    _signal_group(proc.pid, signal.SIGTERM)
    task = asyncio.get_running_loop().create_task(terminate(proc, output, grace, term=False))
    _background.add(task)
    task.add_done_callback(_background.discard)
