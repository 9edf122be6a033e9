"""Batsim 4.2.1's protocol, scheduler side of the engine (Batsim's
``src/protocol.cpp``): the events the scheduler sends, parsed and checked,
and the data of the events sent to it.

Strict by default: everything Batsim 4.2.1 aborts on (``JsonProtocolReader``
``handle_*`` in ``src/protocol.cpp``, the ``server_on_*`` handlers of
``src/server.cpp``, the storage and permission checks of
``src/task_execution.cpp``) is a :class:`~iosched.errors.ProtocolError`, one
line naming the event (``events[K]`` of the reply when it is found while
reading it), its time and its job or profile. A scheduler reply ``{"now": t,
"events": [...]}`` needs a numeric ``now`` (not compared with the request's:
Batsim does not) and events with a numeric ``timestamp`` not after ``now``,
a known string ``type`` and a ``data`` object; events need not be in
timestamp order: each is handled at max(its timestamp, the current time),
as Batsim's ``send_message_at_time`` does. Each event is then checked by its
handler (``_h_*``, table ``_HANDLERS``), which returns the *decision* to
apply (a function and its arguments) when Batsim's server receives the
event, one master-to-master latency after the previous one (see
:mod:`iosched.engine.server`); events that change nothing on the platform
(SET_JOB_METADATA, NOTIFY, REGISTER_PROFILE...) act at once but, as in
Batsim 4.2.1, still pass through the server's mailbox in turn (each costs
one latency and delays the events after it). What Batsim checks when its
server receives the event (CALL_ME_LATER in the past, KILL_JOB of a job
that is not running) is checked then.

Embedded-engine extensions (``--embedded-extensions``,
``self.extensions``), refused otherwise (:meth:`ProtocolMixin._extension`):
dynamic profiles with ``--enable-profile-reuse``, registering again the name
of a collected dynamic profile or an identical profile under an existing
name, dynamically registered composed profiles, the
``generation_strategy`` spread of workload and registered profiles,
EXECUTE_JOB with more than one of ``mapping``, ``storage_mapping`` and
``additional_io_job``, a storage label missing from ``storage_mapping``
resolved to the only storage host, a storage label mapped to a compute host,
computation on storage hosts, CALL_ME_LATER at a time already reached (served
at once), SET_RESOURCE_STATE (acknowledged without effect), and
CHANGE_JOB_STATE from SUBMITTED to any final state or of a job that already
ended. ``docs/real-batsim.md`` lists them with the Batsim source that lacks
them.

Dynamic profiles (REGISTER_PROFILE) are garbage-collected as in Batsim >= 4.0
unless ``--enable-profile-reuse``: once no live dynamic job nor registered
composed profile refers to one (:meth:`ProtocolMixin._release_profile`);
registering a job with a collected profile is then an unknown-profile
error, as in Batsim.

Sources: Batsim 4.2.1 ``docs/protocol.rst``, ``docs/input-workload.rst``
and the source files above (tag v4.2.1).
"""

from __future__ import annotations

import math
import re
from bisect import bisect_left
from collections import ChainMap

from procset import ProcSet

from iosched.batsim.jobs import (
    COMPLETED_FAILED,
    COMPLETED_KILLED,
    COMPLETED_SUCCESSFULLY,
    COMPLETED_WALLTIME_REACHED,
    FINAL_STATES,
    REJECTED,
)
from iosched.engine.ipp import P_DECISION, P_KILLED, P_READY, T_CALL
from iosched.engine.jobs import RUNNING, SCHEDULED, SUBMITTED, DynamicSpec, Job, intervals_of
from iosched.engine.tasks import profile_leaves
from iosched.engine.workload import (
    INT_MAX,
    INT_MIN,
    SPREAD,
    check_job,
    is_int,
    job_walltime,
    parse_job_id,
    pfs_label,
    validate_profile,
)
from iosched.errors import InputError, ProtocolError

__all__ = ["ProtocolMixin", "EXTENSION_FLAG"]

INF = math.inf

#: the command-line flag that serves the embedded-engine extensions
EXTENSION_FLAG = "--embedded-extensions"

_CANONICAL_ALLOC = re.compile(r"\d+(?:-\d+)?(?: \d+(?:-\d+)?)*\Z")

#: Most resource ids the table of parsed allocation strings of
#: :meth:`ProtocolMixin._parse_alloc` holds (emptied when full: at most a few
#: tens of MB)
_ALLOC_TABLE = 1 << 20

#: C++'s std::stoi: leading white space, a sign, digits (the rest ignored)
_STOI = re.compile(r"[ \t\n\v\f\r]*([+-]?[0-9]+)")
_MISSING = object()

#: the job states a job can be killed in (Batsim 4.2.1 ``server_on_kill_jobs``
#: and ``killer_process``: running, or completed but not rejected)
_KILLABLE = frozenset((RUNNING, COMPLETED_SUCCESSFULLY, COMPLETED_FAILED, COMPLETED_WALLTIME_REACHED,
                       COMPLETED_KILLED))
#: CHANGE_JOB_STATE's allowed ``job_state`` values (``handle_change_job_state``)
_CHANGE_STATES = ("NOT_SUBMITTED", RUNNING, COMPLETED_SUCCESSFULLY, COMPLETED_WALLTIME_REACHED,
                  COMPLETED_KILLED, REJECTED)
#: profile types that compute (the permission check of ``task_execution.cpp``)
_COMPUTING = frozenset(("parallel", "parallel_homogeneous", "parallel_homogeneous_total"))
#: profile types an ``additional_io_job`` may have (``generate_matrices_from_profile``
#: is called with no storage mapping: pfs and data_staging abort, delay dies)
_IO_TYPES = _COMPUTING


def _num(x) -> bool:
    return (type(x) is float or type(x) is int) and math.isfinite(x)


def _stoi(s: str):
    """``std::stoi(s)``, or None where it throws (no digits, out of range)."""
    m = _STOI.match(s)
    if m is None:
        return None
    v = int(m.group(1))
    return v if INT_MIN <= v <= INT_MAX else None


def _nothing():
    """The server's handling of an event whose effect the handler already
    applied (REGISTER_PROFILE, SET_JOB_METADATA, NOTIFY...)."""


class ProtocolMixin:
    """The protocol part of a :class:`~iosched.engine.server.Simulation`.

    Owns the state of dynamic registration (``registration_open``,
    ``dyn_profiles`` and the reference counts ``live_refs``, ``seq_refs``),
    ``pending_calls`` (CALL_ME_LATER not yet answered) and ``extensions``
    (``EngineConfig.embedded_extensions``). Uses the server's ``now``,
    ``jobs``, ``profiles``, ``pending``, ``_post``, ``_timer``, ``_emit``
    and the execution's ``_start``, ``_progress``, ``_stop_physics``,
    ``_complete``.
    """

    def _init_protocol(self, cfg):
        self.extensions = bool(cfg.embedded_extensions)
        self.registration_open = cfg.dynamic_jobs
        # garbage collection of dynamic profiles (see _release_profile)
        self.dyn_profiles: set = set()
        self.live_refs: dict = {}
        self.seq_refs: dict = {}
        self.pending_calls = 0
        # dynamic profiles collected so far (Batsim keeps their names)
        self.collected: set = set()
        # jobs Batsim deletes at its next message to the scheduler (_mark_gone)
        self._sent = None
        self._to_delete: list = []
        # allocation string -> what _parse_alloc returns (valid ones only),
        # and the number of resource ids the table holds
        self._allocs: dict = {}
        self._alloc_ids = 0
        if not self.extensions:
            for w in self.workloads:
                if w.extensions:
                    pname, key = w.extensions[0]
                    raise InputError(
                        f"{w.path}: profile '{pname}': field '{key}': '{SPREAD}' is an embedded-engine "
                        "extension (Batsim 4.2.1 ignores the key and gives every executor the full "
                        f"amounts): divide the amounts by the number of executors, or pass {EXTENSION_FLAG}")

    def _extension(self, where, why):
        """A request only the embedded engine serves: a
        :class:`ProtocolError` unless ``--embedded-extensions``.

        :param where: the event, its job or profile, its time.
        :param why: what the real Batsim 4.2.1 does, with its source.
        """
        if not self.extensions:
            raise ProtocolError(f"{where}: {why}; the embedded engine serves it with {EXTENSION_FLAG} only")

    # ------------------------------------------------------ engine -> sched
    def _begins_data(self):
        cfg = self.cfg
        return {
            "nb_resources": self.nb_res,
            "nb_compute_resources": self.nb_compute,
            "nb_storage_resources": len(self.storage_ids),
            "allow_compute_sharing": False,
            "allow_storage_sharing": True,
            "config": {
                "redis-enabled": False,
                "redis-hostname": "127.0.0.1",
                "redis-port": 6379,
                "redis-prefix": "default",
                "profiles-forwarded-on-submission": cfg.forward_profiles,
                "dynamic-jobs-enabled": cfg.dynamic_jobs,
                "dynamic-jobs-acknowledged": cfg.ack_dynamic_jobs,
                "profile-reuse-enabled": cfg.profile_reuse,
                "sched-config": cfg.sched_config,
                "forward-unknown-events": False,
            },
            "compute_resources": [r.to_json() for r in self.res.compute],
            "storage_resources": [r.to_json() for r in self.res.storage],
            "workloads": {w.name: w.path for w in self.workloads},
            "profiles": {w.name: w.profiles for w in self.workloads},
        }

    def _submitted_data(self, j):
        d = {"job_id": j.id, "job": j.json}
        if self.cfg.forward_profiles:
            d["profile"] = self.profiles[j.workload][j.profile]
        return d

    # ------------------------------------------------------ sched -> engine
    def _mark_gone(self):
        """Batsim 4.2.1 deletes the jobs whose end its server handled once it
        sends its next message to the scheduler (``server_process``,
        src/server.cpp: ``jobs_to_be_deleted``); a later event naming one
        aborts ('Cannot get job: it does not exist'). Called when a reply
        arrives, i.e. just after a message was sent: the jobs it announced
        ended (JOB_COMPLETED) and those rejected before it are gone.

        The message just sent is the list that was ``self.pending`` when the
        previous reply arrived (the server sends ``self.pending`` and starts
        a new list)."""
        sent, self._sent = self._sent, self.pending
        if self._to_delete:
            for j in self._to_delete:
                j.gone = True
            self._to_delete = []
        if sent:
            jobs = self.jobs
            for e in sent:
                if e["type"] == "JOB_COMPLETED":
                    jobs[e["data"]["job_id"]].gone = True

    def _apply_reply(self, reply):
        now = self.now
        self._mark_gone()
        if type(reply) is not dict or not _num(reply.get("now")) or type(reply.get("events")) is not list:
            raise ProtocolError(
                f"scheduler reply at t={now:.6f} must be an object with a numeric 'now' and an 'events' list"
            )
        rnow = float(reply["now"])
        self._reply_now = max(rnow, now)
        chain = []
        handlers = self._HANDLERS
        for k, ev in enumerate(reply["events"]):
            if type(ev) is not dict:
                raise ProtocolError(f"events[{k}] of the reply at t={now:.6f}: an event must be an object")
            etype = ev.get("type")
            ts = ev.get("timestamp")
            if type(etype) is not str or not _num(ts):
                raise ProtocolError(f"events[{k}] of the reply at t={now:.6f}: needs a string 'type' and a "
                                    "numeric 'timestamp'")
            if ts > rnow:
                raise ProtocolError(f"events[{k}]: {etype} at t={ts}: timestamp after the reply's now={rnow} "
                                    "(Batsim 4.2.1 requires timestamp <= now)")
            handler = handlers.get(etype)
            if handler is None:
                raise ProtocolError(f"events[{k}]: {etype} at t={ts}: unknown event type")
            data = ev.get("data", _MISSING)
            if type(data) is not dict:
                raise ProtocolError(f"events[{k}]: {etype} at t={ts}: "
                                    f"{'no' if data is _MISSING else 'non-object'} 'data' (an object is needed)")
            ts = float(ts)
            if ts < now:
                ts = now
            try:
                act = handler(self, ts, data)
            except ProtocolError as exc:
                raise ProtocolError(f"events[{k}]: {exc}") from None
            # every event is one message to Batsim's server, received in turn
            # (JsonProtocolReader::send_message_at_time, src/protocol.cpp)
            chain.append((ts, act[0], act[1:]) if act is not None else (ts, _nothing, ()))
        if chain:
            self._post(max(chain[0][0], now), self.L_mm, P_DECISION, (chain, 0))
        else:
            self._post(self._reply_now, self.L_mm, P_READY)

    def _job_for(self, etype, ts, data, key="job_id", submitted=True):
        """The job an event names (Batsim's ``JobIdentifier``: WORKLOAD!NAME).

        :param submitted: refuse a job not submitted yet (else: any job of
            a workload, as Batsim's ``job_is_registered``).
        """
        jid = data.get(key)
        if type(jid) is not str:
            raise ProtocolError(f"{etype} at t={ts:.6f}: missing or non-string '{key}'")
        j = self.jobs.get(jid)
        if j is None:
            parts = parse_job_id(jid)
            if parts is None:
                raise ProtocolError(f"{etype} at t={ts:.6f}: invalid job id '{jid}' (Batsim 4.2.1's "
                                    "JobIdentifier: WORKLOAD!NAME, no other '!')")
            j = self.jobs.get(f"{parts[0]}!{parts[1]}")
        if j is None or (submitted and j.state is None):
            raise ProtocolError(f"{etype} at t={ts:.6f}: unknown job '{jid}'")
        return j

    def _check_exists(self, etype, j):
        """Batsim's ``job_at`` when its server receives the event: a job it
        deleted (see :meth:`_mark_gone`) aborts."""
        if j.gone:
            raise ProtocolError(
                f"{etype} {j.id} at t={self.now:.6f}: the job ended ({j.state}) and the scheduler was told "
                "so: Batsim 4.2.1 has deleted it and aborts ('Cannot get job: it does not exist')")

    def _parse_alloc(self, s, where):
        """Parse an interval-set string (``"0-3 7"``).

        A string parsed before gives the same answer, from a table (at most
        :data:`_ALLOC_TABLE` resource ids: emptied when full); the
        schedulers send the same strings again and again (on the full
        KTH-SP2 trace with ``easy`` on 100 nodes, 7,415 distinct strings in
        28,467 allocations).

        :returns: ``(sorted tuple of resource ids, canonical string,
            intervals)``, the intervals as :func:`~iosched.engine.jobs.intervals_of`
            gives them.
        :raises ProtocolError: not a string, invalid, empty, or outside the machine.
        """
        if not isinstance(s, str):
            raise ProtocolError(f"{where}: 'alloc' must be an interval-set string such as \"0-3 7\"")
        known = self._allocs.get(s)
        if known is not None:
            return known
        key = s
        ids = None
        if _CANONICAL_ALLOC.match(s):  # fast path: already canonical (what pybatsim sends)
            ids = []
            last = -2
            for part in s.split(" "):
                lo_s, _, hi_s = part.partition("-")
                lo = int(lo_s)
                hi = int(hi_s) if hi_s else lo
                if hi < lo or lo <= last + 1:
                    ids = None
                    break
                ids.extend(range(lo, hi + 1))
                last = hi
        if ids is None:
            try:
                ps = ProcSet.from_str(s)
            except Exception:
                raise ProtocolError(f"{where}: invalid allocation '{s}'") from None
            ids, s = list(ps), str(ps)
        if not ids:
            raise ProtocolError(f"{where}: empty allocation")
        if ids[-1] >= self.nb_res or ids[0] < 0:
            raise ProtocolError(
                f"{where}: allocation '{s}' is outside the machine (resources 0-{self.nb_res - 1})"
            )
        if self._alloc_ids + len(ids) > _ALLOC_TABLE:
            self._allocs.clear()
            self._alloc_ids = 0
        self._alloc_ids += len(ids)
        known = self._allocs[key] = (tuple(ids), s, intervals_of(s))
        return known

    # ------------------------------------------------------------ EXECUTE_JOB
    def _h_execute(self, ts, data):
        n = len(data)
        if n != 2 and n != 3 and (n < 2 or not self.extensions):
            jid = data.get("job_id")
            raise ProtocolError(
                f"EXECUTE_JOB{' ' + jid if type(jid) is str else ''} at t={ts:.6f}: 'data' has {n} members "
                f"({', '.join(sorted(map(str, data)))}); "
                "Batsim 4.2.1 needs 2 or 3: 'job_id', 'alloc' and at most one of 'mapping', "
                f"'storage_mapping', 'additional_io_job' (more are served with {EXTENSION_FLAG} only)")
        j = self._job_for("EXECUTE_JOB", ts, data)
        where = f"EXECUTE_JOB {j.id} at t={ts:.6f}"
        if j.state != SUBMITTED:
            raise ProtocolError(f"{where}: the job is {j.state.lower()}, not waiting")
        alloc, alloc_str, alloc_itv = self._parse_alloc(data.get("alloc"), where)
        profiles = self.profiles[j.workload]
        prof = profiles[j.profile]
        mapping = data.get("mapping", _MISSING)
        if mapping is not _MISSING:
            executors = self._parse_mapping(mapping, alloc, where)
        else:
            executors = alloc
        if not self._any_size(prof, profiles):
            # server_on_execute_job, src/server.cpp
            if mapping is not _MISSING:
                if len(executors) != j.res:
                    raise ProtocolError(f"{where}: mapping has {len(executors)} executors, the job requests "
                                        f"{j.res}")
            elif len(alloc) != j.res:
                raise ProtocolError(
                    f"{where}: allocation '{data.get('alloc')}' has {len(alloc)} resources, the job requests "
                    f"{j.res}")
        smap = data.get("storage_mapping", _MISSING)
        if smap is not _MISSING:
            if type(smap) is not dict or not smap:
                raise ProtocolError(f"{where}: 'storage_mapping' must be a non-empty object (label -> "
                                    "resource id)")
            for label, h in smap.items():
                if not is_int(h):
                    raise ProtocolError(f"{where}: 'storage_mapping' maps '{label}' to {h!r}, not to an "
                                        "integer (a resource id)")
        else:
            smap = None
        io_job = data.get("additional_io_job")
        if io_job is not None or "additional_io_job" in data:
            self._check_io_job(j, io_job, where)
        t = prof["type"]
        if t != "delay" and (t not in _COMPUTING or alloc[-1] >= self.nb_compute):
            self._check_hosts(j, alloc, executors, smap, where)
        j.state = SCHEDULED
        j.alloc = alloc
        j.alloc_str = alloc_str
        j.alloc_itv = alloc_itv
        return (self._start, j, alloc, executors, io_job, smap)

    @staticmethod
    def _any_size(prof, profiles):
        """Whether a job of this profile may run on another number of
        executors than it requests: a ``parallel_homogeneous_total``
        profile, or a composed one whose profiles all are (Batsim 4.2.1
        ``server_on_execute_job``)."""
        t = prof["type"]
        if t == "parallel_homogeneous_total":
            return True
        if t != "composed":
            return False
        return all(profiles[s]["type"] == "parallel_homogeneous_total" for s in prof["seq"])

    @staticmethod
    def _parse_mapping(mapping, alloc, where):
        """EXECUTE_JOB's ``mapping`` (executor -> index in the allocation)
        as Batsim 4.2.1's ``handle_execute_job`` reads it: keys and values
        integers or strings read by ``std::stoi``, the executors exactly
        0..k-1. Returns the resource of each executor."""
        if type(mapping) is not dict or not mapping:
            raise ProtocolError(f"{where}: 'mapping' must be a non-empty object (executor -> index in the "
                                "allocation)")
        m = {}
        for key, val in mapping.items():
            e = _stoi(key)
            r = val if is_int(val) else _stoi(val) if type(val) is str else None
            if e is None or r is None:
                raise ProtocolError(f"{where}: invalid 'mapping' entry {key!r}: {val!r} (integers, or strings "
                                    "of integers, are needed)")
            m[e] = r
        executors = []
        for k, (e, r) in enumerate(sorted(m.items())):
            if e != k:
                raise ProtocolError(f"{where}: 'mapping' gives no resource to executor {k}")
            if not 0 <= r < len(alloc):
                raise ProtocolError(f"{where}: 'mapping' puts executor {e} on the {r}-th resource of the "
                                    f"allocation, which has {len(alloc)}")
            executors.append(alloc[r])
        return executors

    def _check_scheduler_profile(self, name, prof, where, profiles):
        """A profile the scheduler gives (REGISTER_PROFILE, an
        ``additional_io_job``'s ``profile``), checked as a workload's
        (:func:`~iosched.engine.workload.validate_profile`, against
        *profiles*), its spread ``generation_strategy`` an extension.

        :raises ProtocolError: an invalid profile, or the spread key without
            ``--embedded-extensions``.
        """
        try:
            ext = validate_profile(name, prof, where, profiles)
        except InputError as exc:
            raise ProtocolError(str(exc)) from None
        if ext is not None:
            self._extension(f"{where}: profile '{name}' field '{ext}'", f"'{SPREAD}' is ignored by Batsim "
                            "4.2.1 (it gives every executor the full amounts): divide the amounts by the "
                            "number of executors")

    def _check_io_job(self, j, io, where):
        """EXECUTE_JOB's ``additional_io_job`` as Batsim 4.2.1 reads it
        (``handle_execute_job``): ``profile_name`` (a string), either a new
        profile given in ``profile`` (added to the job's workload under that
        name, as Batsim does) or an existing one; ``alloc``. Its profile must
        be a computing one (Batsim builds its matrices without a storage
        mapping; composed I/O profiles are not supported here)."""
        where = f"{where}: additional_io_job"
        if type(io) is not dict:
            raise ProtocolError(f"{where}: must be an object")
        pname = io.get("profile_name")
        if type(pname) is not str:
            raise ProtocolError(f"{where}: 'profile_name' (a string) is mandatory")
        profiles = self.profiles[j.workload]
        if "profile" in io:
            if pname in profiles or (j.workload, pname) in self.collected:
                raise ProtocolError(f"{where}: profile '{pname}' already exists (Batsim 4.2.1 adds the given "
                                    "profile to the workload under this name, which must be new)")
            prof = io["profile"]
            self._check_scheduler_profile(pname, prof, where, profiles)
            profiles[pname] = prof
        elif pname not in profiles:
            raise ProtocolError(f"{where}: unknown profile '{pname}'")
        t = profiles[pname]["type"]
        if t not in _IO_TYPES:
            raise ProtocolError(f"{where}: profile '{pname}' is a {t} profile; an I/O job needs a parallel, "
                                "parallel_homogeneous or parallel_homogeneous_total one (Batsim 4.2.1 builds "
                                "it without storage mapping)")
        self._parse_alloc(io.get("alloc"), where)

    def _check_hosts(self, j, alloc, executors, smap, where):
        """The storage hosts of the job's profiles and the hosts that
        compute, as Batsim 4.2.1's ``src/task_execution.cpp`` checks them
        when each task starts (here, when the job starts):
        ``parallel_homogeneous_pfs`` needs the only storage host when there
        is no ``storage_mapping``, else its label in the mapping, on a
        storage host; ``data_staging`` needs both labels in the mapping, on
        storage hosts; computation (> 1e-10 flops) on a storage host
        aborts (``check_ptask_execution_permission``: the i-th host of the
        allocation against the i-th executor's amount)."""
        for leaf in profile_leaves(j.profile, self.profiles[j.workload]):
            t = leaf["type"]
            if t == "parallel_homogeneous_pfs":
                self._storage_host(pfs_label(leaf), smap, where, pfs=True)
            elif t == "data_staging":
                self._storage_host(leaf["from"], smap, where, pfs=False)
                self._storage_host(leaf["to"], smap, where, pfs=False)
            elif t in _COMPUTING and not self.extensions and alloc[-1] >= self.nb_compute:
                n = len(executors)
                if t == "parallel":
                    cpu = leaf["cpu"]
                elif t == "parallel_homogeneous":
                    c = leaf["cpu"] / n if leaf.get("generation_strategy") == SPREAD else leaf["cpu"]
                    cpu = [c] * n
                else:
                    cpu = [leaf["cpu"] / n] * n
                first = bisect_left(alloc, self.nb_compute)
                for i in range(first, min(len(alloc), len(cpu))):
                    if abs(cpu[i]) > 1e-10:
                        raise ProtocolError(
                            f"{where}: {cpu[i]:g} flops on storage host {alloc[i]} (Batsim 4.2.1 aborts: "
                            "'Some computation is assigned to storage node'; computation on storage hosts "
                            f"is served with {EXTENSION_FLAG} only)")

    def _storage_host(self, label, smap, where, pfs):
        """Check that a storage label resolves as in Batsim 4.2.1
        (``generate_parallel_homogeneous_with_pfs``,
        ``generate_data_staging_task``)."""
        single = len(self.storage_ids) == 1
        if smap is None:
            if pfs and single:
                return  # the only storage host
            if single:
                self._extension(where, f"no 'storage_mapping' for the storage label '{label}' of a data_staging "
                                "profile: Batsim 4.2.1 aborts ('Unknown storage label'), the embedded engine "
                                "can use the only storage host")
                return
            raise ProtocolError(f"{where}: no 'storage_mapping' for the storage label '{label}' and the "
                                f"platform has {len(self.storage_ids)} storage hosts (Batsim 4.2.1 needs a "
                                "mapping unless a pfs profile runs with exactly one)")
        if label not in smap:
            if single:
                self._extension(where, f"'storage_mapping' has no label '{label}': Batsim 4.2.1 aborts "
                                "('Unknown storage label'), the embedded engine can use the only storage host")
                return
            raise ProtocolError(f"{where}: 'storage_mapping' has no label '{label}' (Batsim 4.2.1 aborts: "
                                "'Unknown storage label')")
        h = smap[label]
        if not 0 <= h < self.nb_res:
            raise ProtocolError(f"{where}: 'storage_mapping' maps '{label}' to {h}, which is not a resource "
                                f"(0-{self.nb_res - 1})")
        if h < self.nb_compute:
            self._extension(where, f"'storage_mapping' maps '{label}' to resource {h}, a compute host: Batsim "
                            "4.2.1 aborts ('is not a storage host')")

    # ------------------------------------------------------ other decisions
    def _h_reject(self, ts, data):
        if len(data) != 1:
            raise ProtocolError(f"REJECT_JOB at t={ts:.6f}: 'data' must be exactly {{'job_id': ...}}, "
                                f"got {len(data)} members")
        j = self._job_for("REJECT_JOB", ts, data)
        if j.state != SUBMITTED:
            raise ProtocolError(f"REJECT_JOB {j.id} at t={ts:.6f}: the job is {j.state.lower()}, not waiting")
        j.state = REJECTED
        j.alloc = []
        return (self._apply_reject, j)

    def _apply_reject(self, j):
        self.n_unterminated -= 1
        self._row(j)
        self._to_delete.append(j)

    def _h_kill(self, ts, data):
        ids = data.get("job_ids")
        if len(data) != 1 or type(ids) is not list or not ids:
            raise ProtocolError(f"KILL_JOB at t={ts:.6f}: 'data' must be exactly {{'job_ids': a non-empty "
                                "list of job ids}}")
        jobs = [self._job_for("KILL_JOB", ts, {"job_id": jid}, submitted=False) for jid in ids]
        return (self._apply_kill, jobs)

    def _apply_kill(self, jobs):
        """KILL_JOB received by Batsim's server: its killer actor stops the
        running jobs now (their finish time) and sends KILLING_DONE to the
        server, one master-to-master latency later (``P_KILLED``, handled by
        :meth:`_killing_done`).

        Follows Batsim 4.2.1 ``server_on_kill_jobs`` (src/server.cpp) and
        ``killer_process`` (src/jobs_execution.cpp): a job whose kill was
        already requested is skipped (no JOB_KILLED when all are); the others
        must be running or completed (not rejected, not deleted: see
        :meth:`_mark_gone`); the progress of a job is taken before it is
        stopped; a job already ended is left alone.
        """
        to_kill = []
        for j in jobs:
            self._check_exists("KILL_JOB", j)
            if j.kill_requested:
                continue
            if j.state not in _KILLABLE:
                state = "not submitted" if j.state is None else j.state.lower()
                raise ProtocolError(
                    f"KILL_JOB {j.id} at t={self.now:.6f}: the job is {state}, neither running nor completed "
                    "(Batsim 4.2.1 aborts: 'Invalid KILL_JOB' or 'Bad kill')")
            j.kill_requested = True
            to_kill.append(j)
        if not to_kill:
            return
        ids = [j.id for j in to_kill]
        progress = {}
        killed = []
        for j in to_kill:
            if j.state == RUNNING:
                progress[j.id] = self._progress(j, self.now)
                self._stop_physics(j)
                self._complete(j, COMPLETED_KILLED, -2, notify=False)
                killed.append(j)
            else:
                # it ended before the kill: Batsim 4.2.1 gives no progress
                # for it, but pybatsim 3.2.1 indexes job_progress by every
                # id once the object is not empty (docs/engine.md, "Known differences")
                progress[j.id] = {"profile_name": j.profile, "progress": 1.0}
        self._post(self.now, self.L_mm, P_KILLED, (ids, progress, killed))

    def _killing_done(self, ids, progress, killed):
        """KILLING_DONE handled by the server (Batsim 4.2.1
        ``server_on_killing_done``, src/server.cpp): JOB_COMPLETED
        (COMPLETED_KILLED, return code -2, the job's allocation) for each job
        really killed, then one JOB_KILLED for all the requested ids."""
        for j in killed:
            self._emit("JOB_COMPLETED", {"job_id": j.id, "job_state": j.state,
                                         "return_code": j.return_code, "alloc": j.alloc_str})
        self._emit("JOB_KILLED", {"job_ids": ids, "job_progress": progress})

    def _h_call(self, ts, data):
        t = data.get("timestamp")
        if len(data) != 1 or not _num(t):
            raise ProtocolError(f"CALL_ME_LATER at t={ts:.6f}: 'data' must be exactly {{'timestamp': a number}}")
        self.pending_calls += 1
        return (self._apply_call, float(t))

    def _apply_call(self, t):
        """CALL_ME_LATER received by Batsim's server (``server_on_call_me_later``,
        src/server.cpp): the time must be after the server's clock; its
        waiter sleeps ``max(t - now, 1e-5)`` (``waiter_process``,
        src/jobs_execution.cpp), then tells the server (REQUESTED_CALL)."""
        now = self.now
        if t > now:
            fire = t if t - now >= 1e-5 else now + 1e-5
        elif self.extensions:
            fire = now
        else:
            raise ProtocolError(
                f"CALL_ME_LATER at t={now:.6f}: asks for a call at t={t!r}, not after the time Batsim's server "
                f"receives it ({now!r}): Batsim 4.2.1 aborts ('You asked to be awaken in the past!'); "
                f"served at once with {EXTENSION_FLAG} only")
        self._timer(fire, T_CALL)

    def _require_dynamic(self, etype, ts):
        if not self.cfg.dynamic_jobs:
            raise ProtocolError(f"{etype} at t={ts:.6f}: dynamic jobs are disabled (use --enable-dynamic-jobs)")

    def _h_register_profile(self, ts, data):
        self._require_dynamic("REGISTER_PROFILE", ts)
        wl, name, prof = data.get("workload_name"), data.get("profile_name"), data.get("profile", _MISSING)
        if type(wl) is not str or type(name) is not str:
            raise ProtocolError(f"REGISTER_PROFILE at t={ts:.6f}: needs string 'workload_name' and 'profile_name'")
        where = f"REGISTER_PROFILE {wl}!{name} at t={ts:.6f}"
        if not self.registration_open:
            raise ProtocolError(f"{where}: registration was declared finished (NOTIFY registration_finished)")
        if type(prof) is not dict:
            raise ProtocolError(f"{where}: 'profile' must be an object")
        profiles = self.profiles.setdefault(wl, {})
        if self.cfg.profile_reuse:
            self._extension(where, "the real Batsim 4.2.1 crashes (SIGSEGV) when dynamic profiles are "
                            "registered with --enable-profile-reuse")
        if (wl, name) in self.collected:
            self._extension(where, "the real Batsim 4.2.1 keeps the name of a collected dynamic profile and "
                            "aborts on its re-registration (Profiles::add_profile, src/profiles.cpp)")
        if prof.get("type") == "composed":
            self._extension(where, "the real Batsim 4.2.1 crashes (SIGSEGV) running jobs of dynamically "
                            "registered composed profiles")
        if name in profiles:
            if profiles[name] != prof:
                raise ProtocolError(f"{where}: a different profile with this name already exists")
            self._extension(where, "a profile of this name already exists: Batsim 4.2.1 aborts even when it is "
                            "identical (handle_register_profile, src/protocol.cpp)")
            return
        self._check_scheduler_profile(name, prof, where, ChainMap({name: prof}, profiles))  # no copy
        profiles[name] = prof
        self.dyn_profiles.add((wl, name))
        if prof.get("type") == "composed":
            for sub in set(prof.get("seq", ())):
                self.seq_refs[(wl, sub)] = self.seq_refs.get((wl, sub), 0) + 1

    def _h_register_job(self, ts, data):
        self._require_dynamic("REGISTER_JOB", ts)
        jid = data.get("job_id")
        parts = parse_job_id(jid) if type(jid) is str else None
        if parts is None:
            raise ProtocolError(f"REGISTER_JOB at t={ts:.6f}: 'job_id' must be a string WORKLOAD!JOB")
        wl, name = parts
        full = f"{wl}!{name}"
        where = f"REGISTER_JOB {full} at t={ts:.6f}"
        if not self.registration_open:
            raise ProtocolError(f"{where}: registration was declared finished (NOTIFY registration_finished)")
        job = data.get("job")
        if type(job) is not dict:
            raise ProtocolError(f"{where}: 'job' must be an object (the job's description)")
        profiles = self.profiles.get(wl)
        if profiles is None:
            raise ProtocolError(f"{where}: workload '{wl}' does not exist (register a profile in it first)")
        if full in self.jobs:
            raise ProtocolError(f"{where}: duplicate job id")
        prof = job.get("profile")
        if type(prof) is str and (wl, prof) in self.collected and prof not in profiles:
            raise ProtocolError(f"{where}: profile '{prof}' of workload '{wl}' was collected once its "
                                "jobs finished (Batsim: 'it existed some time ago but is no longer accessible'; "
                                "use --enable-profile-reuse)")
        try:
            local = check_job(job, where, wl, profiles, name_job=False)
        except InputError as exc:
            raise ProtocolError(str(exc)) from None
        if local != name:
            raise ProtocolError(f"{where}: the job's 'id' {job['id']!r} names job '{local}', not '{name}' "
                                "(Batsim 4.2.1 aborts: 'Internal error')")
        js = dict(job)
        js["id"] = full
        j = Job(DynamicSpec(full, wl, name, ts, job["res"], prof, job_walltime(job.get("walltime")), js),
                static=False)
        self.live_refs[(wl, prof)] = self.live_refs.get((wl, prof), 0) + 1
        j.state = SUBMITTED
        self.jobs[full] = j
        self.n_unterminated += 1
        if self.cfg.ack_dynamic_jobs:
            return (self._emit, "JOB_SUBMITTED", self._submitted_data(j))

    def _h_notify(self, ts, data):
        t = data.get("type")
        if t == "registration_finished":
            if self.cfg.dynamic_jobs:  # without, Batsim ignores it (is_simulation_finished)
                self.registration_open = False
        elif t == "continue_registration":
            if self.cfg.dynamic_jobs:
                self.registration_open = True
        else:
            raise ProtocolError(f"NOTIFY at t={ts:.6f}: unknown notification type {t!r} (registration_finished "
                                "or continue_registration)")

    def _h_set_resource_state(self, ts, data):
        res, state = data.get("resources"), data.get("state")
        where = f"SET_RESOURCE_STATE at t={ts:.6f}"
        if len(data) != 2:
            raise ProtocolError(f"{where}: 'data' must be exactly {{'resources', 'state'}}")
        self._parse_alloc(res, where)
        if type(state) is not str or _stoi(state) is None:
            raise ProtocolError(f"{where}: 'state' must be a string holding an integer (a power state)")
        self._extension(where, "power states need energy (-E), which the embedded engine does not simulate; "
                        "Batsim 4.2.1 aborts without it (server_on_pstate_modification, src/server.cpp); the "
                        "embedded engine acknowledges it without effect")
        return (self._emit, "RESOURCE_STATE_CHANGED", {"resources": res, "state": state})

    def _h_set_metadata(self, ts, data):
        if len(data) != 2:
            raise ProtocolError(f"SET_JOB_METADATA at t={ts:.6f}: 'data' must be exactly "
                                "{'job_id', 'metadata'}")
        j = self._job_for("SET_JOB_METADATA", ts, data, submitted=False)
        md = data.get("metadata")
        if type(md) is not str:
            raise ProtocolError(f"SET_JOB_METADATA {j.id} at t={ts:.6f}: 'metadata' must be a string")
        if '"' in md:
            raise ProtocolError(f"SET_JOB_METADATA {j.id} at t={ts:.6f}: 'metadata' must not contain double "
                                "quotes (Batsim 4.2.1: its CSV output)")
        self._check_exists("SET_JOB_METADATA", j)
        j.metadata = md

    def _h_change_state(self, ts, data):
        j = self._job_for("CHANGE_JOB_STATE", ts, data, submitted=False)
        st = data.get("job_state")
        where = f"CHANGE_JOB_STATE {j.id} at t={ts:.6f}"
        if st not in _CHANGE_STATES and not (self.extensions and st in FINAL_STATES):
            raise ProtocolError(f"{where}: unsupported job_state {st!r} (Batsim 4.2.1: one of "
                                f"{', '.join(_CHANGE_STATES)})")
        old = j.state
        if old == SUBMITTED and st == REJECTED:  # Batsim: SUBMITTED -> REJECTED
            pass
        elif old == SUBMITTED and st == RUNNING:
            raise ProtocolError(f"{where}: SUBMITTED -> RUNNING (a job the scheduler then ends itself) is "
                                "accepted by Batsim 4.2.1 but not supported by the embedded engine")
        elif old in (RUNNING, SCHEDULED) and st in FINAL_STATES:
            raise ProtocolError(f"{where}: the job is running: Batsim 4.2.1 records it ended but its "
                                "execution goes on, and it counts the job twice when it ends (it aborts: "
                                "'inconsistency: no jobs are running')")
        elif self.extensions and st in FINAL_STATES and old in FINAL_STATES:
            # the job already ended: only its recorded final state changes
            j.state = st
            self._restate_row(j, st)
            return
        elif not (self.extensions and st in FINAL_STATES and old == SUBMITTED):
            state = "not submitted" if old is None else old
            raise ProtocolError(f"{where}: cannot change a job from {state} to {st} (Batsim 4.2.1 aborts: "
                                "SUBMITTED -> RUNNING or REJECTED and RUNNING -> COMPLETED_* only; "
                                f"{EXTENSION_FLAG} serves SUBMITTED -> any final state and restates ended jobs)")
        j.state = st
        j.alloc = []
        self.n_unterminated -= 1
        self._row(j)
        self._to_delete.append(j)

    def _h_query(self, ts, data):
        reqs = data.get("requests")
        names = ", ".join(map(str, reqs)) if isinstance(reqs, dict) else "?"
        raise ProtocolError(
            f"QUERY at t={ts:.6f}: request(s) '{names}' not supported by the embedded engine "
            "(energy is out of scope; Batsim 4.2.1 aborts without -E)"
        )

    def _h_answer(self, ts, data):
        """ANSWER (``handle_answer``): ``estimate_waiting_time`` objects only;
        no effect, as in Batsim 4.2.1."""
        if not data:
            raise ProtocolError(f"ANSWER at t={ts:.6f}: 'data' must be a non-empty object")
        for key, v in data.items():
            if key != "estimate_waiting_time":
                raise ProtocolError(f"ANSWER at t={ts:.6f}: unknown ANSWER type '{key}'")
            if type(v) is not dict or type(v.get("job_id")) is not str \
                    or not _num(v.get("estimated_waiting_time")):
                raise ProtocolError(f"ANSWER at t={ts:.6f}: 'estimate_waiting_time' must be an object with a "
                                    "string 'job_id' and a numeric 'estimated_waiting_time'")
        return None

    def _h_to_job_msg(self, ts, data):
        """TO_JOB_MSG (``handle_to_job_msg``): the job must exist; no effect
        (no profile of the engine reads messages)."""
        j = self._job_for("TO_JOB_MSG", ts, data, submitted=False)
        if type(data.get("msg")) is not str:
            raise ProtocolError(f"TO_JOB_MSG {j.id} at t={ts:.6f}: 'msg' must be a string")
        self._check_exists("TO_JOB_MSG", j)
        return None

    _HANDLERS = {
        "EXECUTE_JOB": _h_execute,
        "REJECT_JOB": _h_reject,
        "KILL_JOB": _h_kill,
        "CALL_ME_LATER": _h_call,
        "REGISTER_JOB": _h_register_job,
        "REGISTER_PROFILE": _h_register_profile,
        "NOTIFY": _h_notify,
        "SET_RESOURCE_STATE": _h_set_resource_state,
        "SET_JOB_METADATA": _h_set_metadata,
        "CHANGE_JOB_STATE": _h_change_state,
        "QUERY": _h_query,
        "ANSWER": _h_answer,
        "TO_JOB_MSG": _h_to_job_msg,
    }

    # ---------------------------------------------------- dynamic profiles
    def _release_profile(self, j):
        """A job terminated: for a dynamic job without
        ``--enable-profile-reuse``, collect its profile once no live dynamic
        job nor registered composed profile refers to it (Batsim >= 4.0
        garbage-collects such profiles)."""
        if j.static or self.cfg.profile_reuse:
            return
        key = (j.workload, j.profile)
        n = self.live_refs.get(key, 1) - 1
        if n > 0:
            self.live_refs[key] = n
            return
        self.live_refs.pop(key, None)
        self._collect(j.workload, j.profile)

    def _collect(self, wl, name):
        if (wl, name) not in self.dyn_profiles or self.live_refs.get((wl, name)) \
                or self.seq_refs.get((wl, name)):
            return
        self.dyn_profiles.discard((wl, name))
        self.collected.add((wl, name))
        prof = self.profiles.get(wl, {}).pop(name, None)
        if prof is not None and prof.get("type") == "composed":
            for sub in set(prof.get("seq", ())):
                k = (wl, sub)
                left = self.seq_refs.get(k, 1) - 1
                if left > 0:
                    self.seq_refs[k] = left
                else:
                    self.seq_refs.pop(k, None)
                    self._collect(wl, sub)
