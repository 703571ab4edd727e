"""Wrappers: commands that run another command given as their arguments.

``sudo -u root rm x`` runs ``rm x``: a wrapper reads options of its own (some taking an
argument), sometimes ``NAME=value`` assignments (``env``, ``sudo``) or fixed operands
(``timeout``'s duration, ``flock``'s lock file, ``chroot``'s directory), and then runs the
rest. :data:`WRAPPERS` says how each one reads its options; :func:`after_wrapper` finds where
the wrapped command starts (and other places an option it does not know makes possible), and
collects the arguments of options whose value is a shell script (``env -S``, ``flock -c``).
:func:`exec_commands` finds the commands of ``find -exec``/``-execdir``/``-ok``/``-okdir``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Protocol

__all__ = ["WRAPPERS", "after_wrapper", "exec_commands"]

_EXEC_FLAGS = frozenset({"-exec", "-execdir", "-ok", "-okdir"})


class _Valued(Protocol):
    @property
    def value(self) -> str: ...


@dataclass(frozen=True, slots=True)
class _Options:
    """How a wrapper reads its options before the command it runs."""

    with_arg: str = ""  # short options taking an argument (attached or the next word)
    flags: str = ""  # short options without one
    optional: str = ""  # short options whose argument can only be attached (xargs -i)
    long_with_arg: frozenset[str] = frozenset()
    long_flags: frozenset[str] = frozenset()
    stops: str = ""  # short options that make it run nothing (command -v)
    assignments: bool = False  # NAME=value words may follow (env, sudo)
    operands: int = 0  # words before the command (timeout's duration)
    script: frozenset[str] = frozenset()  # options whose argument is split as a script
    options_after: bool = False  # options may follow the operands (flock file -c cmd)


def _names(text: str) -> frozenset[str]:
    return frozenset(text.split())


WRAPPERS: Mapping[str, _Options] = {
    "sudo": _Options(
        with_arg="ugpCDhrtTRU",
        flags="AbEHiKklnPSsVv",
        long_with_arg=_names(
            "user group prompt close-from chdir host role type command-timeout other-user chroot"
        ),
        long_flags=_names(
            "preserve-env login shell non-interactive background askpass set-home stdin "
            "reset-timestamp remove-timestamp list validate preserve-groups bell"
        ),
        assignments=True,
    ),
    "doas": _Options(with_arg="uC", flags="nsL"),
    "env": _Options(
        with_arg="uCSP",
        flags="i0v",
        long_with_arg=_names("unset chdir split-string"),
        long_flags=_names("ignore-environment null debug"),
        assignments=True,
        script=frozenset({"S", "split-string"}),
    ),
    "command": _Options(flags="pvV", stops="vV"),
    "builtin": _Options(),
    "exec": _Options(with_arg="a", flags="cl"),
    "nohup": _Options(),
    "coproc": _Options(),
    "time": _Options(
        with_arg="fo",
        flags="pavqV",
        long_with_arg=_names("format output"),
        long_flags=_names("append verbose quiet portability"),
    ),
    "nice": _Options(with_arg="n", flags="0123456789", long_with_arg=_names("adjustment")),
    "ionice": _Options(with_arg="cnPpu", flags="t", long_with_arg=_names("class classdata")),
    "timeout": _Options(
        with_arg="sk",
        flags="v",
        long_with_arg=_names("signal kill-after"),
        long_flags=_names("preserve-status foreground verbose"),
        operands=1,
    ),
    "stdbuf": _Options(with_arg="ioe", long_with_arg=_names("input output error")),
    "setsid": _Options(flags="cfw", long_flags=_names("ctty fork wait")),
    "xargs": _Options(
        with_arg="aEdILnPs",
        flags="0prtxo",
        optional="eil",
        long_with_arg=_names(
            "arg-file delimiter eof replace max-lines max-args max-procs max-chars process-slot-var"
        ),
        long_flags=_names("null interactive no-run-if-empty verbose exit open-tty show-limits"),
    ),
    "taskset": _Options(
        flags="apchV", long_flags=_names("all-tasks pid cpu-list help version"), operands=1
    ),
    "chrt": _Options(
        with_arg="TPD",
        flags="bdfioraRmpvhV",
        long_with_arg=_names("sched-runtime sched-period sched-deadline"),
        long_flags=_names("batch deadline fifo idle other rr reset-on-fork all-tasks max pid"),
        operands=1,
    ),
    "flock": _Options(
        with_arg="Ewc",
        flags="sexnuoFhV",
        long_with_arg=_names("conflict-exit-code timeout wait command"),
        long_flags=_names("shared exclusive nb nonblock unlock close no-fork verbose"),
        operands=1,
        script=frozenset({"c", "command"}),
        options_after=True,
    ),
    "unshare": _Options(
        with_arg="SGRwl",
        flags="muinpUCTfrchV",
        long_with_arg=_names(
            "setuid setgid root wd propagation setgroups map-user map-group map-users "
            "map-groups monotonic boottime"
        ),
        long_flags=_names(
            "mount uts ipc net pid user cgroup time fork map-root-user map-current-user "
            "map-auto kill-child mount-proc keep-caps"
        ),
    ),
    "setpriv": _Options(
        flags="dhV",
        long_with_arg=_names(
            "ambient-caps inh-caps bounding-set ruid euid rgid egid reuid regid groups "
            "securebits pdeathsig selinux-label apparmor-profile landlock-access landlock-rule"
        ),
        long_flags=_names("dump nnp no-new-privs clear-groups keep-groups init-groups reset-env"),
    ),
    "strace": _Options(
        with_arg="abeEIoOpPsSuUX",
        flags="cCdDfFhiknqrtTvVwxyYzZA",
        long_with_arg=_names("output"),
    ),
    "ltrace": _Options(with_arg="aAeEfFlnoOpsuwxX", flags="bcCdDhiLrStTV"),
    "busybox": _Options(),
    "toybox": _Options(),
    "chroot": _Options(
        long_with_arg=_names("userspec groups"), long_flags=_names("skip-chdir"), operands=1
    ),
    "nsenter": _Options(
        with_arg="tSGW",
        flags="amuinpCUTFZ",
        optional="rw",
        long_with_arg=_names("target setuid setgid wdns"),
        long_flags=_names(
            "all mount uts ipc net pid cgroup user time no-fork follow-context "
            "preserve-credentials root wd"
        ),
    ),
    "runuser": _Options(
        with_arg="ugGcsw",
        flags="lmpfPh",
        long_with_arg=_names("user group supp-group command shell whitelist-environment"),
        long_flags=_names("login preserve-environment fast pty"),
        script=frozenset({"c", "command"}),
    ),
    "pkexec": _Options(long_with_arg=_names("user"), long_flags=_names("disable-internal-agent")),
    "prlimit": _Options(with_arg="po", optional="cdefilmnqrstuvxy"),
    "numactl": _Options(
        with_arg="iNCmpP",
        flags="alsHSb",
        long_with_arg=_names("interleave cpunodebind physcpubind membind preferred"),
    ),
    "fakeroot": _Options(with_arg="is", long_with_arg=_names("lib faked"), flags="uh"),
}


def _short(word: str, spec: _Options) -> tuple[int, bool, str | None, bool]:
    """A short-option cluster: (words used, known, the script option's argument, arg pending)."""
    known = True
    for j in range(1, len(word)):
        ch = word[j]
        if ch in spec.with_arg:
            attached = word[j + 1 :]
            is_script = ch in spec.script
            if attached:
                return 1, known, attached if is_script else None, False
            return 2, known, None, is_script
        if ch in spec.optional:
            return 1, known, None, False
        if ch not in spec.flags:
            known = False
    return 1, known, None, False


def _options(
    words: Sequence[_Valued], i: int, spec: _Options, scripts: list[str], others: list[int]
) -> int | None:
    """Read options from ``i``; where they end (None: an option that runs nothing)."""
    n = len(words)
    while i < n:
        w = words[i].value
        if w == "--":
            return i + 1
        if w.startswith("--"):
            name, eq, arg = w[2:].partition("=")
            if name in spec.script:
                if eq:
                    scripts.append(arg)
                elif i + 1 < n:
                    scripts.append(words[i + 1].value)
            if eq or name in spec.long_flags:
                i += 1
            elif name in spec.long_with_arg:
                i += 2
            else:
                others.append(i + 2)
                i += 1
            continue
        if w == "-" and spec.assignments:  # ``env -`` is ``env -i``
            i += 1
            continue
        if w.startswith("-") and len(w) > 1:
            if any(ch in spec.stops for ch in w[1:]):
                return None
            used, known, script, pending = _short(w, spec)
            if script is not None:
                scripts.append(script)
            if pending and i + 1 < n:
                scripts.append(words[i + 1].value)
            if not known:
                others.append(i + used + 1)
            i += used
            continue
        break
    return i


def after_wrapper(
    words: Sequence[_Valued], spec: _Options, scripts: list[str]
) -> tuple[int, list[int]]:
    """Where the wrapped command starts, and other starts an unknown option makes possible."""
    n = len(words)
    others: list[int] = []
    i = _options(words, 1, spec, scripts, others)
    if i is None:
        return n, []
    if spec.assignments:
        while i < n and "=" in words[i].value:  # any word with ``=``, as ``env`` reads it
            i += 1
    i += spec.operands
    if spec.options_after and spec.operands:
        more = _options(words, i, spec, scripts, others)
        return (n, []) if more is None else (more, [o for o in others if o < n])
    return i, [o + spec.operands for o in others if o < n]


def exec_commands(words: Sequence[_Valued]) -> list[tuple[int, int]]:
    """Where the commands of ``find ... -exec cmd args ;`` are (``-execdir``, ``-ok``, ...)."""
    out: list[tuple[int, int]] = []
    i = 1
    while i < len(words):
        if words[i].value in _EXEC_FLAGS:
            j = i + 1
            while j < len(words) and words[j].value not in (";", "+"):
                j += 1
            if j > i + 1:
                out.append((i + 1, j))
            i = j
        i += 1
    return out
