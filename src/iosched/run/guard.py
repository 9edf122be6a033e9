"""The orphan guard: kills a runner's process sessions when the runner dies.

:class:`iosched.run.supervise.Child` starts every scheduler and engine in a
session of its own, so nothing ties their life to the runner's: a runner
killed with SIGKILL (which it cannot catch) would leave them running. The
guard is a small process, started once per runner process (by
:func:`iosched.run.supervise.guard_sessions`), in a session of its own, whose
stdin is a pipe from the runner. The runner writes ``+SID`` when it starts a
session and ``-SID`` when it has cleaned it up. When the pipe closes — the
runner exited or was killed, whatever the signal — the guard sends SIGKILL to
every process of the sessions still listed, then exits.

A session is listed only once its leader has started, so a runner killed
between starting a process and writing ``+SID`` would leave that process
behind. The guard therefore has a second key, given on its command line: the
runner starts every child with ``IOSCHED_GUARD=<token>`` in its environment
(:func:`iosched.run.supervise.guard_token`), and at EOF the guard also kills
every process whose initial environment carries that token (Linux /proc).

This file runs as a script (``python -I -S guard.py``: standard library
only, started in a few milliseconds); it imports nothing from the package.
"""

import os
import signal
import sys


def _processes(match) -> list:
    """Pids of the other processes (Linux /proc) for which ``match(pid)`` is
    true; a process that vanished or cannot be read does not match."""
    pids = []
    try:
        names = os.listdir("/proc")
    except OSError:
        return pids
    me = os.getpid()
    for name in names:
        if not name.isdigit() or int(name) == me:
            continue
        try:
            if match(int(name)):
                pids.append(int(name))
        except OSError:
            pass
    return pids


def _session_members(sids: set) -> list:
    """Pids of the processes whose session id is in *sids* (Linux /proc; elsewhere
    only the session leaders' process groups are killed)."""
    return _processes(lambda pid: os.getsid(pid) in sids)


def _started_with(needle: bytes, pid: int) -> bool:
    with open(f"/proc/{pid}/environ", "rb") as f:
        return needle in f.read().split(b"\0")


def _token_members(token: bytes) -> list:
    """Pids of the processes whose initial environment holds ``IOSCHED_GUARD=token``."""
    if not token:
        return []
    needle = b"IOSCHED_GUARD=" + token
    return _processes(lambda pid: _started_with(needle, pid))


def kill_sessions(sids: set) -> None:
    """SIGKILL every process of the sessions *sids* (their process groups, then
    every other member found)."""
    for sid in sids:
        try:
            os.killpg(sid, signal.SIGKILL)
        except OSError:
            pass
    for pid in _session_members(sids):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass


def main() -> int:
    """Read ``+SID`` / ``-SID`` lines on stdin until EOF, then kill what is listed
    and every process started with this guard's token (``argv[1]``, if given)."""
    token = sys.argv[1].encode() if len(sys.argv) > 1 else b""
    signal.signal(signal.SIGINT, signal.SIG_IGN)  # a Ctrl-C is the runner's to handle
    sids: set = set()
    stdin = sys.stdin.buffer
    while True:
        try:
            line = stdin.readline()
        except OSError:
            break
        if not line:
            break
        line = line.strip()
        try:
            sid = int(line[1:])
        except ValueError:
            continue
        if line[:1] == b"+":
            sids.add(sid)
        elif line[:1] == b"-":
            sids.discard(sid)
    if sids:
        kill_sessions(sids)
    for pid in _token_members(token):
        try:
            os.kill(pid, signal.SIGKILL)
        except OSError:
            pass
    return 0


if __name__ == "__main__":
    sys.exit(main())
