"""Batsim 4.2.1's protocol, scheduler side of the engine (Batsim's
``src/protocol.cpp``): the events the scheduler sends, parsed and checked,
and the data of the events sent to it.

A scheduler reply ``{"now": t, "events": [...]}`` is checked as a whole
(numeric ``now`` not before the request's, events in ascending timestamp
order, none after ``now``), then each event by its handler (``_h_*``, table
``_HANDLERS``). A handler raises :class:`~iosched.errors.ProtocolError`
naming the event, its time and the job, or returns the *decision* to apply
(a function and its arguments) when Batsim's server receives the event, one
master-to-master latency after the previous one (see
:mod:`iosched.engine.server`); events that change nothing on the platform
(SET_JOB_METADATA, NOTIFY, REGISTER_PROFILE...) act at once but, as in
Batsim 4.2.1, still pass through the server's mailbox in turn (each costs
one latency and delays the events after it).

Dynamic profiles (REGISTER_PROFILE) are garbage-collected as in Batsim >= 4.0
unless ``--enable-profile-reuse``: once no live dynamic job nor registered
composed profile refers to one (:meth:`ProtocolMixin._release_profile`);
registering a job with a collected profile is then an unknown-profile
error, as in Batsim.

Sources: Batsim 4.2.1 ``docs/protocol.rst``, ``docs/input-workload.rst``.
"""

from __future__ import annotations

import math
import re
import sys
from collections import ChainMap

from procset import ProcSet

from iosched.batsim.jobs import (
    COMPLETED_KILLED,
    FINAL_STATES,
    REJECTED,
    SEPARATOR,
    split_job_id,
    walltime_field_ok,
)
from iosched.engine.ipp import P_DECISION, P_KILLED, P_READY, T_CALL
from iosched.engine.jobs import RUNNING, SCHEDULED, SUBMITTED, DynamicSpec, Job
from iosched.engine.workload import check_job_fields, job_walltime, validate_profile
from iosched.errors import InputError, ProtocolError

__all__ = ["ProtocolMixin"]

INF = math.inf

_CANONICAL_ALLOC = re.compile(r"\d+(?:-\d+)?(?: \d+(?:-\d+)?)*\Z")


def _num(x) -> bool:
    return isinstance(x, (int, float)) and not isinstance(x, bool) and math.isfinite(x)


def _nothing():
    """The server's handling of an event whose effect the handler already
    applied (REGISTER_PROFILE, SET_JOB_METADATA, NOTIFY...)."""


class ProtocolMixin:
    """The protocol part of a :class:`~iosched.engine.server.Simulation`.

    Owns the state of dynamic registration (``registration_open``,
    ``dyn_profiles`` and the reference counts ``live_refs``, ``seq_refs``)
    and ``pending_calls`` (CALL_ME_LATER not yet answered). Uses the server's
    ``now``, ``jobs``, ``profiles``, ``_post``, ``_timer``, ``_emit`` and the
    execution's ``_start``, ``_progress``, ``_stop_physics``, ``_complete``.
    """

    def _init_protocol(self, cfg):
        self.registration_open = cfg.dynamic_jobs
        # garbage collection of dynamic profiles (see _release_profile)
        self.dyn_profiles: set = set()
        self.live_refs: dict = {}
        self.seq_refs: dict = {}
        self.pending_calls = 0
        # dynamic profiles collected so far (Batsim keeps their names)
        self.collected: set = set()
        self._warned: set = set()

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
    def _apply_reply(self, reply):
        now = self.now
        if not isinstance(reply, dict) or not _num(reply.get("now")) or not isinstance(reply.get("events"), list):
            raise ProtocolError(
                f"scheduler reply at t={now:.6f} must be an object with a numeric 'now' and an 'events' list"
            )
        rnow = float(reply["now"])
        self._reply_now = max(rnow, now)
        chain = []
        last_ts = -INF
        for k, ev in enumerate(reply["events"]):
            if not isinstance(ev, dict) or not isinstance(ev.get("type"), str) or not _num(ev.get("timestamp")):
                raise ProtocolError(
                    f"scheduler reply at t={now:.6f}: events[{k}] needs a string 'type' and a numeric 'timestamp'"
                )
            ts = float(ev["timestamp"])
            etype = ev["type"]
            if ts > rnow + 1e-9:
                raise ProtocolError(f"{etype} at t={ts}: timestamp is after the reply's now={rnow}")
            if ts < last_ts - 1e-9:
                raise ProtocolError(f"{etype} at t={ts}: events are not in ascending timestamp order")
            last_ts = ts
            ts = max(ts, now)
            data = ev.get("data", {})
            if not isinstance(data, dict):
                raise ProtocolError(f"{etype} at t={ts}: 'data' must be an object")
            handler = self._HANDLERS.get(etype)
            if handler is None:
                raise ProtocolError(f"{etype} at t={ts}: unknown event type")
            act = handler(self, ts, data)
            # every event is one message to Batsim's server, received in turn
            # (JsonProtocolReader::send_message_at_time, src/protocol.cpp)
            chain.append((ts, act[0], act[1:]) if act is not None else (ts, _nothing, ()))
        if chain:
            self._post(max(chain[0][0], now), self.L_mm, P_DECISION, (chain, 0))
        else:
            self._post(self._reply_now, self.L_mm, P_READY)

    def _job_for(self, etype, ts, data, key="job_id"):
        jid = data.get(key)
        if not isinstance(jid, str):
            raise ProtocolError(f"{etype} at t={ts:.6f}: missing or non-string '{key}'")
        j = self.jobs.get(jid)
        if j is None or j.state is None:
            raise ProtocolError(f"{etype} at t={ts:.6f}: unknown job '{jid}'")
        return j

    def _parse_alloc(self, s, where):
        """Parse an interval-set string (``"0-3 7"``).

        :returns: ``(sorted list of resource ids, canonical string)``.
        :raises ProtocolError: not a string, invalid, empty, or outside the machine.
        """
        if not isinstance(s, str):
            raise ProtocolError(f"{where}: 'alloc' must be an interval-set string such as \"0-3 7\"")
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
        return ids, s

    def _h_execute(self, ts, data):
        j = self._job_for("EXECUTE_JOB", ts, data)
        where = f"EXECUTE_JOB {j.id} at t={ts:.6f}"
        if j.state != SUBMITTED:
            raise ProtocolError(f"{where}: the job is {j.state.lower()}, not waiting")
        alloc, alloc_str = self._parse_alloc(data.get("alloc"), where)
        mapping = data.get("mapping")
        if mapping is not None:
            if not isinstance(mapping, dict):
                raise ProtocolError(f"{where}: 'mapping' must be an object")
            try:
                executors = [alloc[int(mapping[str(i)])] for i in range(len(mapping))]
            except (KeyError, ValueError, IndexError, TypeError):
                raise ProtocolError(f"{where}: invalid 'mapping' {mapping}") from None
            if len(executors) != j.res:
                raise ProtocolError(f"{where}: mapping has {len(executors)} executors, the job requests {j.res}")
        else:
            if len(alloc) != j.res:
                raise ProtocolError(
                    f"{where}: allocation '{data.get('alloc')}' has {len(alloc)} resources, the job requests {j.res}"
                )
            executors = alloc
        smap = data.get("storage_mapping")
        if smap is not None:
            if not isinstance(smap, dict) or not all(_num(v) and 0 <= v < self.nb_res for v in smap.values()):
                raise ProtocolError(f"{where}: 'storage_mapping' must map labels to resource ids")
        io_job = data.get("additional_io_job")
        if io_job is not None and not isinstance(io_job, dict):
            raise ProtocolError(f"{where}: 'additional_io_job' must be an object")
        j.state = SCHEDULED
        j.alloc = alloc
        j.alloc_str = alloc_str
        return (self._start, j, alloc, executors, io_job, smap)

    def _h_reject(self, ts, data):
        j = self._job_for("REJECT_JOB", ts, data)
        if j.state != SUBMITTED:
            raise ProtocolError(f"REJECT_JOB {j.id} at t={ts:.6f}: the job is {j.state.lower()}, not waiting")
        j.state = REJECTED
        j.alloc = []
        return (self._apply_reject, j)

    def _apply_reject(self, j):
        self.n_unterminated -= 1
        self._row(j, self.now)

    def _h_kill(self, ts, data):
        ids = data.get("job_ids")
        if not isinstance(ids, list) or not ids:
            raise ProtocolError(f"KILL_JOB at t={ts:.6f}: 'job_ids' must be a non-empty list")
        for jid in ids:
            self._job_for("KILL_JOB", ts, {"job_id": jid})
        return (self._apply_kill, list(ids))

    def _apply_kill(self, ids):
        """KILL_JOB received by Batsim's server: its killer actor stops the
        running jobs now (their finish time) and sends KILLING_DONE to the
        server, one master-to-master latency later (``P_KILLED``, handled by
        :meth:`_killing_done`).

        Follows Batsim 4.2.1 ``server_on_kill_jobs`` (src/server.cpp) and
        ``killer_process`` (src/jobs_execution.cpp): the progress of a job is
        taken before it is stopped; a job already ended is left alone.
        """
        progress = {}
        killed = []
        for jid in ids:
            j = self.jobs[jid]
            if j.state == RUNNING:
                progress[jid] = self._progress(j, self.now)
                self._stop_physics(j)
                self._complete(j, COMPLETED_KILLED, -2, notify=False)
                killed.append(j)
            else:
                # it ended (or never started) before the kill: Batsim 4.2.1
                # gives no progress for it, but pybatsim 3.2.1 indexes
                # job_progress by every id once the object is not empty
                # (README "Known differences")
                progress[jid] = {"profile_name": j.profile,
                                 "progress": 1.0 if j.state in FINAL_STATES else 0.0}
        self._post(self.now, self.L_mm, P_KILLED, (list(ids), progress, killed))

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
        if not _num(t):
            raise ProtocolError(f"CALL_ME_LATER at t={ts:.6f}: 'timestamp' must be a number")
        self.pending_calls += 1
        return (self._apply_call, float(t))

    def _apply_call(self, t):
        self._timer(max(t, self.now), T_CALL)

    def _require_dynamic(self, etype, ts):
        if not self.cfg.dynamic_jobs:
            raise ProtocolError(f"{etype} at t={ts:.6f}: dynamic jobs are disabled (use --enable-dynamic-jobs)")

    def _not_in_batsim(self, kind, where, why):
        """A request the real Batsim 4.2.1 cannot serve (embedded-only
        behaviour). With ``--strict-batsim``: :class:`ProtocolError`.
        Without: served, and one warning line on stderr per *kind*.

        :param kind: a short key (one warning per kind and run).
        :param where: the event, its job or profile, its time.
        :param why: what the real Batsim 4.2.1 does, with its source.
        """
        if self.cfg.strict_batsim:
            raise ProtocolError(f"{where}: {why} (--strict-batsim)")
        if kind not in self._warned:
            self._warned.add(kind)
            sys.stderr.write(f"iosched-batsim: warning: {where}: {why}; served by the embedded engine only "
                             "(--strict-batsim makes this an error)\n")

    def _h_register_profile(self, ts, data):
        self._require_dynamic("REGISTER_PROFILE", ts)
        wl, name, prof = data.get("workload_name"), data.get("profile_name"), data.get("profile")
        if not isinstance(wl, str) or not isinstance(name, str):
            raise ProtocolError(f"REGISTER_PROFILE at t={ts:.6f}: needs string 'workload_name' and 'profile_name'")
        where = f"REGISTER_PROFILE {wl}!{name} at t={ts:.6f}"
        profiles = self.profiles.setdefault(wl, {})
        if self.cfg.profile_reuse:
            self._not_in_batsim("reuse", where, "the real Batsim 4.2.1 crashes (SIGSEGV) when dynamic profiles "
                                "are registered with --enable-profile-reuse")
        if (wl, name) in self.collected:
            self._not_in_batsim("collected", where, "the real Batsim 4.2.1 keeps the name of a collected dynamic "
                                "profile and aborts on its re-registration (Profiles::add_profile, "
                                "src/profiles.cpp)")
        if isinstance(prof, dict) and prof.get("type") == "composed":
            self._not_in_batsim("composed", where, "the real Batsim 4.2.1 crashes (SIGSEGV) running jobs of "
                                "dynamically registered composed profiles")
        if name in profiles:
            if profiles[name] != prof:
                raise ProtocolError(f"{where}: a different profile with this name already exists")
            return
        try:
            validate_profile(name, prof, where, ChainMap({name: prof}, profiles))  # no copy
        except InputError as exc:
            raise ProtocolError(str(exc)) from None
        profiles[name] = prof
        self.dyn_profiles.add((wl, name))
        if prof.get("type") == "composed":
            for sub in set(prof.get("seq", ())):
                self.seq_refs[(wl, sub)] = self.seq_refs.get((wl, sub), 0) + 1

    def _h_register_job(self, ts, data):
        self._require_dynamic("REGISTER_JOB", ts)
        jid = data.get("job_id")
        job = data.get("job")
        if not isinstance(jid, str) or SEPARATOR not in jid:
            raise ProtocolError(f"REGISTER_JOB at t={ts:.6f}: 'job_id' must be a string WORKLOAD!JOB")
        where = f"REGISTER_JOB {jid} at t={ts:.6f}"
        if not self.registration_open:
            raise ProtocolError(f"{where}: registration was declared finished (NOTIFY registration_finished)")
        if jid in self.jobs:
            raise ProtocolError(f"{where}: duplicate job id")
        if not isinstance(job, dict):
            raise ProtocolError(f"{where}: 'job' must be an object")
        try:
            check_job_fields(job, where)
        except InputError as exc:
            raise ProtocolError(str(exc)) from None
        wl, local = split_job_id(jid)
        if (wl, job["profile"]) in self.collected and job["profile"] not in self.profiles.get(wl, {}):
            raise ProtocolError(f"{where}: profile '{job['profile']}' of workload '{wl}' was collected once its "
                                "jobs finished (Batsim: 'it existed some time ago but is no longer accessible'; "
                                "use --enable-profile-reuse)")
        if job["profile"] not in self.profiles.get(wl, {}):
            raise ProtocolError(f"{where}: unknown profile '{job['profile']}' in workload '{wl}'")
        wt = job.get("walltime")
        if not walltime_field_ok(wt):
            raise ProtocolError(f"{where}: walltime must be > 0 or -1")
        js = dict(job)
        js["id"] = jid
        j = Job(DynamicSpec(jid, wl, local, ts, int(job["res"]), job["profile"], job_walltime(wt), js),
                static=False)
        self.live_refs[(wl, j.profile)] = self.live_refs.get((wl, j.profile), 0) + 1
        j.state = SUBMITTED
        self.jobs[jid] = j
        self.n_unterminated += 1
        if self.cfg.ack_dynamic_jobs:
            return (self._emit, "JOB_SUBMITTED", self._submitted_data(j))

    def _h_notify(self, ts, data):
        t = data.get("type")
        if t == "registration_finished":
            self._require_dynamic("NOTIFY registration_finished", ts)
            self.registration_open = False
        elif t == "continue_registration":
            self._require_dynamic("NOTIFY continue_registration", ts)
            self.registration_open = True
        else:
            raise ProtocolError(f"NOTIFY at t={ts:.6f}: unknown notification type '{t}'")

    def _h_set_resource_state(self, ts, data):
        res, state = data.get("resources"), data.get("state")
        self._parse_alloc(res, f"SET_RESOURCE_STATE at t={ts:.6f}")
        return (self._emit, "RESOURCE_STATE_CHANGED", {"resources": res, "state": str(state)})

    def _h_set_metadata(self, ts, data):
        j = self._job_for("SET_JOB_METADATA", ts, data)
        md = data.get("metadata")
        if not isinstance(md, str):
            raise ProtocolError(f"SET_JOB_METADATA {j.id} at t={ts:.6f}: 'metadata' must be a string")
        j.metadata = md

    def _h_change_state(self, ts, data):
        j = self._job_for("CHANGE_JOB_STATE", ts, data)
        st = data.get("job_state")
        where = f"CHANGE_JOB_STATE {j.id} at t={ts:.6f}"
        if st not in FINAL_STATES:
            raise ProtocolError(f"{where}: unsupported job_state '{st}' (expected one of {', '.join(FINAL_STATES)})")
        if j.state in FINAL_STATES:
            # the job already ended: only its recorded final state changes
            j.state = st
            self._restate_row(j, st)
            return
        if j.state != SUBMITTED:
            raise ProtocolError(f"{where}: cannot change the state of a {j.state.lower()} job")
        j.state = st
        j.alloc = []
        self.n_unterminated -= 1
        self._row(j, ts)

    def _h_query(self, ts, data):
        reqs = data.get("requests")
        names = ", ".join(reqs) if isinstance(reqs, dict) else "?"
        raise ProtocolError(
            f"QUERY at t={ts:.6f}: request(s) '{names}' not supported by the embedded engine "
            "(energy is out of scope)"
        )

    def _h_answer(self, ts, data):
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
