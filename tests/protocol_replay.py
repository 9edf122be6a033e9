"""Replay golden Batsim transcripts against one side of the protocol.

A golden transcript (``../shared/golden/*/transcript.jsonl``) is the list of
every message of one real run (Batsim 4.2.1 + pybatsim 3.2.1), one
``{"dir": "engine->sched" | "sched->engine", "msg": {...}}`` object a line,
with paths rewritten to ``inputs/...``. Requests and replies alternate.

Two players, neither needs a real Batsim:

* :func:`play_engine_side` -- a fake *engine* (ZeroMQ REQ, connects, as
  Batsim does) sends the transcript's engine->sched messages in order to a
  scheduler process (any pybatsim scheduler started with
  :func:`start_pybatsim`) and collects its replies.
  :func:`compare_replies` then checks each reply against the transcript's.
* :func:`play_scheduler_side` -- a fake *scheduler* (ZeroMQ REP, binds)
  answers an engine process (our ``iosched.engine.cli``) with the
  transcript's sched->engine replies and checks every engine->sched event
  against the transcript's.

Tolerance on simulated times (s): ``ABS_TOL + REL_TOL * |t|`` with
ABS_TOL = 0.005 and REL_TOL = 1e-6, the tolerance of ``tests/test_golden.py``
(see its docstring for the justification).

Tolerance on JOB_KILLED's ``progress`` ratios: PROGRESS_TOL = 1e-5
#: Relative tolerance on the other floats of an event (a job's extra fields):
#: Batsim reads workload numbers with rapidjson's default (not full
#: precision) parser, which can be one unit in the last place off for
#: numbers of 17 significant digits (g15: a job's ``v`` written
#: 2569315634196.4106 is forwarded as 2569315634196.41, the neighbouring
#: double).
NUMBER_REL_TOL = 1e-15
(absolute). Both engines compute ``1 - remaining_ratio`` of the SimGrid
task at the kill; on g7 the real Batsim writes 0.082489 and the embedded
engine 0.08248875 (2.5e-7 apart: about 40 us of that transfer, below the
time tolerance), the rest of the event being identical.

Scheduler side, details:

* Events are compared as one flattened sequence, not message by message,
  so that an engine grouping events into messages otherwise still gets
  consistent replies: when one of our messages covers several golden
  messages, the reply is the concatenation of their golden replies; when a
  golden message is split over several of ours, the earlier parts get an
  empty reply. Every such regrouping is recorded in
  :attr:`SchedulerSideReport.regroupings` (the tests require none on
  g1-g11: with Batsim's 1-byte message cost the embedded engine groups
  events as Batsim does; before it, the last JOB_SUBMITTED and NOTIFY
  ``no_more_static_job_to_submit`` were one message here and two in
  Batsim). Simultaneous events may also be matched out of order
  (``reorder_window``; recorded in :attr:`SchedulerSideReport.reorders`).
* Time shift: a golden reply was computed for the golden request's ``now``;
  our request's ``now`` differs by a few tenths of a millisecond. Each
  golden reply is shifted by ``our_now - golden_request_now`` (``now`` and
  every event ``timestamp``, and CALL_ME_LATER's ``data.timestamp``), i.e.
  the scheduler is assumed to take the same simulated time to answer, as
  pybatsim does (its reply ``now`` is the request's plus the time its
  scheduler consumed). The reply's ``now`` is never below our request's.
* SIMULATION_BEGINS is compared field by field except the workload paths
  (absolute here, ``inputs/...`` in the transcript): only their file names
  are compared.
"""

from __future__ import annotations

import gzip
import json
import math
import os
import signal
import subprocess
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path

import zmq

ABS_TOL = 0.005
REL_TOL = 1e-6
PROGRESS_TOL = 1e-5
#: Relative tolerance on the other floats of an event (a job's extra fields):
#: Batsim reads workload numbers with rapidjson's default (not full
#: precision) parser, which can be one unit in the last place off for
#: numbers of 17 significant digits (g15: a job's ``v`` written
#: 2569315634196.4106 is forwarded as 2569315634196.41, the neighbouring
#: double).
NUMBER_REL_TOL = 1e-15
ENGINE_TO_SCHED = "engine->sched"
SCHED_TO_ENGINE = "sched->engine"


def close(a: float, b: float) -> bool:
    """|a - b| <= ABS_TOL + REL_TOL * |b| (b is the golden value)."""
    return abs(float(a) - float(b)) <= ABS_TOL + REL_TOL * abs(float(b))


# --------------------------------------------------------------------------
# transcripts


def load_exchanges(path) -> list[tuple[dict, dict]]:
    """The (request, reply) pairs of a transcript (``.jsonl``, or gzipped
    ``.jsonl.gz``), in order.

    :raises ValueError: the lines do not alternate engine->sched,
        sched->engine.
    """
    path = Path(path)
    text = gzip.decompress(path.read_bytes()).decode() if path.suffix == ".gz" else path.read_text()
    recs = [json.loads(line) for line in text.splitlines() if line.strip()]
    if len(recs) % 2:
        raise ValueError(f"{path}: odd number of messages ({len(recs)})")
    pairs = []
    for i in range(0, len(recs), 2):
        req, rep = recs[i], recs[i + 1]
        if req["dir"] != ENGINE_TO_SCHED or rep["dir"] != SCHED_TO_ENGINE:
            raise ValueError(f"{path}: line {i + 1}: messages do not alternate")
        pairs.append((req["msg"], rep["msg"]))
    return pairs


def rewrite_inputs(msg: dict, inputs_dir) -> dict:
    """A copy of *msg* whose SIMULATION_BEGINS workload paths ``inputs/X``
    point into *inputs_dir* (the golden inputs)."""
    msg = json.loads(json.dumps(msg))
    for ev in msg["events"]:
        if ev["type"] == "SIMULATION_BEGINS":
            wl = ev["data"].get("workloads", {})
            for name, p in wl.items():
                wl[name] = str(Path(inputs_dir) / Path(p).name)
    return msg


def event_key(ev: dict) -> tuple:
    """(type, job_id or None): what identifies an event in a sequence."""
    return ev["type"], ev.get("data", {}).get("job_id")


# --------------------------------------------------------------------------
# comparisons


#: numeric data fields compared as simulated times (within tolerance), not
#: exactly: Batsim re-serializes a job's ``subtime`` and ``walltime`` with 6
#: decimals (57.245384 for the workload's 57.245384205516594), the embedded
#: engine forwards the workload's value.
TIME_FIELDS = ("timestamp", "subtime", "walltime")


def _diff_values(ours, gold, where: str, out: list, time_keys=TIME_FIELDS):
    if isinstance(gold, dict) and isinstance(ours, dict):
        if set(ours) != set(gold):
            out.append(f"{where}: keys {sorted(ours)} != {sorted(gold)}")
            return
        for k in gold:
            numbers = isinstance(gold[k], (int, float)) and isinstance(ours[k], (int, float))
            if k in time_keys and numbers:
                if not close(ours[k], gold[k]):
                    out.append(f"{where}.{k}: {ours[k]} != {gold[k]} (beyond tolerance)")
            elif k == "progress" and numbers:
                if abs(ours[k] - gold[k]) > PROGRESS_TOL:
                    out.append(f"{where}.{k}: {ours[k]} != {gold[k]} (beyond {PROGRESS_TOL})")
            elif numbers and (isinstance(gold[k], float) or isinstance(ours[k], float)):
                if not math.isclose(ours[k], gold[k], rel_tol=NUMBER_REL_TOL, abs_tol=0.0):
                    out.append(f"{where}.{k}: {ours[k]} != {gold[k]} (beyond {NUMBER_REL_TOL:g} relative)")
            else:
                _diff_values(ours[k], gold[k], f"{where}.{k}", out, time_keys)
    elif isinstance(gold, list) and isinstance(ours, list):
        if len(ours) != len(gold):
            out.append(f"{where}: {len(ours)} items != {len(gold)}")
            return
        for i, (o, g) in enumerate(zip(ours, gold)):
            _diff_values(o, g, f"{where}[{i}]", out, time_keys)
    elif ours != gold:
        out.append(f"{where}: {ours!r} != {gold!r}")


def diff_event(ours: dict, gold: dict, where: str) -> list[str]:
    """Differences between two events: same type, same data (numbers named
    in :data:`TIME_FIELDS` within tolerance), timestamps within tolerance;
    SIMULATION_BEGINS workload paths compared by file name only."""
    out: list[str] = []
    if ours.get("type") != gold.get("type"):
        return [f"{where}: type {ours.get('type')} != {gold.get('type')}"]
    if not close(ours["timestamp"], gold["timestamp"]):
        out.append(f"{where} {gold['type']}: timestamp {ours['timestamp']} != {gold['timestamp']}")
    od, gd = ours.get("data", {}), gold.get("data", {})
    if gold["type"] == "SIMULATION_BEGINS":
        od, gd = dict(od), dict(gd)
        ow, gw = od.pop("workloads", {}), gd.pop("workloads", {})
        if {k: Path(v).name for k, v in ow.items()} != {k: Path(v).name for k, v in gw.items()}:
            out.append(f"{where} SIMULATION_BEGINS: workloads {ow} != {gw}")
    _diff_values(od, gd, f"{where} {gold['type']} data", out)
    return out


def diff_message(ours: dict, gold: dict, where: str) -> list[str]:
    """Differences between two messages: ``now`` within tolerance, the same
    events in the same order (see :func:`diff_event`)."""
    out = []
    if not close(ours["now"], gold["now"]):
        out.append(f"{where}: now {ours['now']} != {gold['now']}")
    oe, ge = ours["events"], gold["events"]
    if [e["type"] for e in oe] != [e["type"] for e in ge]:
        return out + [f"{where}: events {[event_key(e) for e in oe]} != {[event_key(e) for e in ge]}"]
    for i, (o, g) in enumerate(zip(oe, ge)):
        out += diff_event(o, g, f"{where} event {i}")
    return out


def shape_problems(request: dict, reply: dict, submitted: set, where: str) -> list[str]:
    """Protocol-shape properties of one reply: ``now`` >= the request's,
    events sorted by timestamp and not after ``now``, every EXECUTE_JOB /
    REJECT_JOB names a job submitted earlier (*submitted*, updated by the
    caller)."""
    out = []
    if not isinstance(reply, dict) or not isinstance(reply.get("events"), list):
        return [f"{where}: reply is not {{now, events}}: {reply!r}"]
    if reply["now"] < request["now"]:
        out.append(f"{where}: reply now {reply['now']} < request now {request['now']}")
    ts = [e["timestamp"] for e in reply["events"]]
    if ts != sorted(ts):
        out.append(f"{where}: events not sorted by timestamp: {ts}")
    if ts and ts[-1] > reply["now"] + 1e-9:
        out.append(f"{where}: event timestamp {ts[-1]} after reply now {reply['now']}")
    for e in reply["events"]:
        if e["type"] in ("EXECUTE_JOB", "REJECT_JOB") and e["data"]["job_id"] not in submitted:
            out.append(f"{where}: {e['type']} names {e['data']['job_id']}, never submitted")
    return out


# --------------------------------------------------------------------------
# processes


def _kill(proc: subprocess.Popen | None) -> None:
    if proc is None or proc.poll() is not None:
        if proc is not None:
            proc.wait()
        return
    try:
        os.killpg(proc.pid, signal.SIGTERM)
    except ProcessLookupError:
        pass
    try:
        proc.wait(timeout=3)
    except subprocess.TimeoutExpired:
        try:
            os.killpg(proc.pid, signal.SIGKILL)
        except ProcessLookupError:
            pass
        proc.wait()


def free_port() -> int:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


#: the scheduler launchers a replay can start: pybatsim's and the direct layer's
LAUNCHERS = ("batsim.cmds.launcher", "iosched.run.direct_launcher")


def start_pybatsim(scheduler_file, port: int, log_path, options: dict | None = None,
                   cwd=None, launcher: str = LAUNCHERS[0]) -> subprocess.Popen:
    """Start ``python -m LAUNCHER FILE`` (pybatsim's launcher by default)
    bound on 127.0.0.1:*port* (own session; stdout and stderr to
    *log_path*)."""
    argv = [sys.executable, "-m", launcher, str(scheduler_file),
            "-s", f"tcp://127.0.0.1:{port}", "-t", "600000", "-v", "warning"]
    if options:
        argv += ["-o", json.dumps(options)]
    env = dict(os.environ)
    if env.get("PYTHONPATH"):   # relative entries (PYTHONPATH=src) would follow cwd
        env["PYTHONPATH"] = os.pathsep.join(str(Path(e).resolve()) if e else e
                                            for e in env["PYTHONPATH"].split(os.pathsep))
    log = open(log_path, "wb")
    try:
        return subprocess.Popen(argv, stdout=log, stderr=subprocess.STDOUT, cwd=cwd, env=env,
                                start_new_session=True)
    finally:
        log.close()


def _recv(sock, proc: subprocess.Popen, what: str, log_path, timeout: float):
    """Receive one JSON message, failing early if *proc* dies."""
    end = time.monotonic() + timeout
    while True:
        if sock.poll(100):
            return json.loads(sock.recv_string())
        if proc.poll() is not None:
            tail = Path(log_path).read_text(errors="replace")[-2000:] if log_path else ""
            raise RuntimeError(f"{what} exited with {proc.returncode} before replying:\n{tail}")
        if time.monotonic() > end:
            raise TimeoutError(f"no message from {what} within {timeout:g} s")


# --------------------------------------------------------------------------
# engine side: our fake engine drives a real scheduler


@dataclass
class EngineSideResult:
    requests: list = field(default_factory=list)   # what we sent
    golden: list = field(default_factory=list)     # the transcript's replies
    replies: list = field(default_factory=list)    # the scheduler's replies
    scheduler_returncode: int | None = None


def play_engine_side(exchanges, scheduler_file, workdir, inputs_dir, options=None,
                     stop=None, timeout=30.0, launcher: str = LAUNCHERS[0]) -> EngineSideResult:
    """Send the transcript's requests in order to a pybatsim scheduler.

    :param exchanges: :func:`load_exchanges` pairs.
    :param stop: optional ``stop(index, golden_reply, reply) -> bool``; when
        it returns True after a reply, the replay ends there with a
        SIMULATION_ENDS message (so the scheduler exits cleanly).
    :param launcher: the scheduler's launcher module (:data:`LAUNCHERS`).
    :returns: the requests sent, the golden replies and the replies received.
    """
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    log = workdir / "scheduler.log"
    result = EngineSideResult()
    ctx = zmq.Context.instance()
    for attempt in range(3):
        port = free_port()
        proc = start_pybatsim(scheduler_file, port, log, options, cwd=workdir, launcher=launcher)
        sock = ctx.socket(zmq.REQ)
        sock.setsockopt(zmq.LINGER, 0)
        try:
            sock.connect(f"tcp://127.0.0.1:{port}")
            for i, (req, gold) in enumerate(exchanges):
                msg = rewrite_inputs(req, inputs_dir)
                sock.send_string(json.dumps(msg))
                try:
                    reply = _recv(sock, proc, "the scheduler", log, timeout)
                except RuntimeError:
                    if i == 0 and "Address already in use" in log.read_text(errors="replace") \
                            and attempt < 2:
                        break  # port taken meanwhile: retry on another one
                    raise
                result.requests.append(msg)
                result.golden.append(gold)
                result.replies.append(reply)
                ends = any(e["type"] == "SIMULATION_ENDS" for e in req["events"])
                if not ends and stop is not None and stop(i, gold, reply):
                    now = max(reply["now"], msg["now"])
                    sock.send_string(json.dumps({"now": now, "events": [
                        {"timestamp": now, "type": "SIMULATION_ENDS", "data": {}}]}))
                    _recv(sock, proc, "the scheduler", log, timeout)
                    break
            if result.replies or attempt == 2:
                try:
                    result.scheduler_returncode = proc.wait(timeout=timeout)
                except subprocess.TimeoutExpired:
                    pass
                return result
        finally:
            sock.close()
            _kill(proc)
    return result


def compare_replies(result: EngineSideResult) -> list[str]:
    """Every reply against the transcript's (see :func:`diff_message`)."""
    out = []
    for i, (ours, gold) in enumerate(zip(result.replies, result.golden)):
        out += diff_message(ours, gold, f"reply {i} (request now={result.requests[i]['now']})")
    return out


def check_shapes(result: EngineSideResult) -> list[str]:
    """Protocol-shape properties (see :func:`shape_problems`) of every reply."""
    submitted: set = set()
    out = []
    for i, (req, reply) in enumerate(zip(result.requests, result.replies)):
        for e in req["events"]:
            if e["type"] == "JOB_SUBMITTED":
                submitted.add(e["data"]["job_id"])
        out += shape_problems(req, reply, submitted, f"reply {i}")
    if len(result.replies) != len(result.requests):
        out.append(f"{len(result.requests)} requests but {len(result.replies)} replies")
    return out


def decisions(msg: dict) -> list[tuple]:
    """The decisions of a reply, without times: (type, job_id, alloc)."""
    return [(e["type"], e.get("data", {}).get("job_id"), e.get("data", {}).get("alloc"))
            for e in msg["events"]]


# --------------------------------------------------------------------------
# scheduler side: our fake scheduler answers a real engine


@dataclass
class SchedulerSideReport:
    differences: list = field(default_factory=list)
    #: (our message index, its event keys, event keys of the golden messages
    #: it completed) for every message not in one-to-one correspondence
    regroupings: list = field(default_factory=list)
    #: (our message index, our event key, the golden event key expected
    #: there) for every event matched out of order (``reorder_window``)
    reorders: list = field(default_factory=list)
    messages: int = 0        # messages received from the engine
    events: int = 0          # events compared
    max_time_diff: float = 0.0
    engine_returncode: int | None = None
    engine_log: str = ""


def _shift_reply(reply: dict, delta: float) -> dict:
    reply = json.loads(json.dumps(reply))
    reply["now"] += delta
    for e in reply["events"]:
        e["timestamp"] += delta
        if e["type"] == "CALL_ME_LATER" and isinstance(e.get("data", {}).get("timestamp"), (int, float)):
            e["data"]["timestamp"] += delta
    return reply


def play_scheduler_side(exchanges, engine_argv_prefix, platform, workloads, workdir,
                        timeout=60.0, max_differences=50, reorder_window=None) -> SchedulerSideReport:
    """Answer an engine with the transcript's replies, checking its events.

    :param engine_argv_prefix: the engine command (e.g. ``[python, -m,
        iosched.engine.cli]`` or ``[batsim]``); ``-p``, ``-w``, ``-e``,
        ``-s`` and ``-q`` are added.
    :param reorder_window: None: the engine's events must come in the
        golden order. A number (s): an event may match a later golden event
        of the same type and job whose timestamp is at most that much after
        the next unmatched golden event's (simultaneous events in another
        order: jobs ending in the same instant, announced in an order
        decided by the last bits of SimGrid's float sums); each permutation
        is recorded in :attr:`SchedulerSideReport.reorders`.
    """
    workdir = Path(workdir)
    workdir.mkdir(parents=True, exist_ok=True)
    report = SchedulerSideReport()
    gold_msgs = [req for req, _ in exchanges]
    flat = [(mi, ei) for mi, m in enumerate(gold_msgs) for ei in range(len(m["events"]))]
    pos = 0           # next golden event (index into flat)
    ahead: set = set()  # golden events matched out of order, beyond pos
    ctx = zmq.Context.instance()
    sock = ctx.socket(zmq.REP)
    sock.setsockopt(zmq.LINGER, 0)
    port = sock.bind_to_random_port("tcp://127.0.0.1")
    argv = [*engine_argv_prefix, "-p", str(platform)]
    for w in workloads:
        argv += ["-w", str(w)]
    argv += ["-e", str(workdir / "out"), "-s", f"tcp://127.0.0.1:{port}", "-q"]
    log = workdir / "engine.log"
    with open(log, "wb") as f:
        proc = subprocess.Popen(argv, stdout=f, stderr=subprocess.STDOUT, start_new_session=True,
                                cwd=workdir)
    diffs = report.differences
    try:
        first_open = 0  # first golden message not yet fully consumed
        while True:
            msg = _recv(sock, proc, "the engine", log, timeout)
            k = report.messages
            report.messages += 1
            evs = msg["events"]
            for j, ev in enumerate(evs):
                while pos < len(flat) and pos in ahead:
                    ahead.discard(pos)
                    pos += 1
                if pos >= len(flat):
                    diffs.append(f"message {k} (now={msg['now']}): extra event {event_key(ev)}")
                    continue
                at = pos
                if reorder_window is not None:
                    t0 = gold_msgs[flat[pos][0]]["events"][flat[pos][1]]["timestamp"]
                    q = pos
                    while q < len(flat):
                        gq = gold_msgs[flat[q][0]]["events"][flat[q][1]]
                        if gq["timestamp"] > t0 + reorder_window:
                            break
                        if q not in ahead and event_key(gq) == event_key(ev):
                            at = q
                            break
                        q += 1
                mi, ei = flat[at]
                g = gold_msgs[mi]["events"][ei]
                d = diff_event(ev, g, f"message {k} (now={msg['now']}) event {j}")
                if not d:
                    report.max_time_diff = max(report.max_time_diff,
                                               abs(ev["timestamp"] - g["timestamp"]))
                diffs.extend(d)
                report.events += 1
                if at == pos:
                    pos += 1
                else:
                    ahead.add(at)
                    report.reorders.append((k, event_key(ev), event_key(gold_msgs[flat[pos][0]]["events"][flat[pos][1]])))
            while pos < len(flat) and pos in ahead:
                ahead.discard(pos)
                pos += 1
            # golden messages fully consumed by now
            done_upto = flat[pos][0] if pos < len(flat) else len(gold_msgs)
            covered = list(range(first_open, done_upto))
            if len(covered) != 1 or len(gold_msgs[covered[0]]["events"]) != len(evs):
                report.regroupings.append(
                    (k, [event_key(e) for e in evs],
                     [[event_key(e) for e in gold_msgs[mi]["events"]] for mi in covered]))
            first_open = done_upto
            if len(diffs) > max_differences:
                diffs.append("(more differences not compared)")
                _kill(proc)
                return report
            events, now = [], msg["now"]
            for mi in covered:
                rep = _shift_reply(exchanges[mi][1], msg["now"] - gold_msgs[mi]["now"])
                events += rep["events"]
                now = max(now, rep["now"])
            events.sort(key=lambda e: e["timestamp"])  # stable: golden order kept on ties
            sock.send_string(json.dumps({"now": now, "events": events}))
            if any(e["type"] == "SIMULATION_ENDS" for e in evs):
                break
        if pos < len(flat):
            mi, ei = flat[pos]
            diffs.append(f"the engine ended before golden event {pos} "
                         f"{event_key(gold_msgs[mi]['events'][ei])} (message {mi})")
        try:
            report.engine_returncode = proc.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            diffs.append(f"the engine did not exit within {timeout:g} s after SIMULATION_ENDS")
    finally:
        sock.close()
        _kill(proc)
        report.engine_log = log.read_text(errors="replace")[-2000:]
    return report
