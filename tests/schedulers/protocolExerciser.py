"""A pybatsim scheduler that uses the less common parts of Batsim's protocol
(test fixture): CALL_ME_LATER, KILL_JOB, SET_JOB_METADATA, REGISTER_PROFILE,
REGISTER_JOB and NOTIFY registration_finished.

Jobs start first-come first-served on the lowest free resources. Options:

* ``kill_at`` (s): at that time (via CALL_ME_LATER) kill job ``w0!1``;
* ``dynamic`` (bool): on the first submission, register the profile
  ``dyn!d5`` (delay 5 s) and the job ``dyn!extra`` using it, then declare
  the registration finished;
* ``dynamic_at_begin`` (bool): the same, in the reply to SIMULATION_BEGINS;
* ``metadata``: a string attached to every job with SET_JOB_METADATA;
* ``reuse`` (bool, with ``dynamic``): declare the registration finished only
  when ``dyn!extra`` has completed, after registering ``dyn!again`` with the
  same profile ``dyn!d5`` (Batsim garbage-collects that profile unless
  ``--enable-profile-reuse``);
* ``reregister`` (bool, with ``reuse``): register ``dyn!d5`` again just
  before ``dyn!again`` (the real Batsim 4.2.1 aborts on that once the
  profile was collected).
"""

from batsim.batsim import BatsimScheduler
from procset import ProcSet


class ProtocolExerciser(BatsimScheduler):
    def onSimulationBegins(self):
        # pybatsim calls this before onAfterBatsimInit
        self.free = ProcSet((0, self.bs.nb_compute_resources - 1))
        self.queue = []
        self.running = {}
        self.registered = False
        self.killed = []
        if "kill_at" in self.options:
            self.bs.wake_me_up_at(self.options["kill_at"])
        if self.options.get("dynamic_at_begin"):
            self.registered = True
            self.bs.register_profiles("dyn", {"d5": {"type": "delay", "delay": 5}})
            self.bs.register_job("dyn!extra", 1, 100, "d5")
            self.bs.notify_registration_finished()

    def onJobSubmission(self, job):
        if self.options.get("dynamic") and not self.registered:
            self.registered = True
            self.bs.register_profiles("dyn", {"d5": {"type": "delay", "delay": 5}})
            self.bs.register_job("dyn!extra", 1, 100, "d5")
            if not self.options.get("reuse"):
                self.bs.notify_registration_finished()
        if job.requested_resources > self.bs.nb_compute_resources:
            self.bs.reject_jobs([job])
        else:
            self.queue.append(job)

    def onJobCompletion(self, job):
        self.free |= self.running.pop(job.id)
        if job.id == "dyn!extra" and self.options.get("reuse"):
            if self.options.get("reregister"):
                self.bs.register_profiles("dyn", {"d5": {"type": "delay", "delay": 5}})
            self.bs.register_job("dyn!again", 1, 100, "d5")
            self.bs.notify_registration_finished()

    def onJobsKilled(self, jobs):
        for job in jobs:
            self.killed.append(job.id)
            if job.id in self.running:
                self.free |= self.running.pop(job.id)

    def onRequestedCall(self):
        if "w0!1" in self.running:
            self.bs.kill_jobs([self.bs.jobs["w0!1"]])

    def onNoMoreEvents(self):
        started = []
        while self.queue and self.queue[0].requested_resources <= len(self.free):
            job = self.queue.pop(0)
            job.allocation = ProcSet(*list(self.free)[: job.requested_resources])
            self.free -= job.allocation
            self.running[job.id] = job.allocation
            started.append(job)
            if "metadata" in self.options:
                self.bs.set_job_metadata(job.id, self.options["metadata"])
        if started:
            self.bs.execute_jobs(started)
