"""A pybatsim scheduler that breaks Batsim's protocol on purpose (test fixture).

Option ``mode``:

* ``unknown_job``: EXECUTE_JOB of a job that does not exist;
* ``outside``: an allocation beyond the last resource;
* ``double``: two jobs on the same resource at the same time;
* ``bad_size``: an allocation whose size differs from the request;
* ``crash``: raise an exception on the first submission;
* ``hang``: never answer the first submission;
* ``ignore``: never execute nor reject anything (the simulation stalls).
"""

import time

from batsim.batsim import BatsimScheduler
from procset import ProcSet


class Misbehaving(BatsimScheduler):
    def onAfterBatsimInit(self):
        self.mode = self.options.get("mode", "unknown_job")
        self.started = 0

    def onJobSubmission(self, job):
        mode = self.mode
        if mode == "crash":
            raise RuntimeError("this scheduler crashes on purpose")
        if mode == "hang":
            time.sleep(3600)
        if mode == "ignore":
            return
        if mode == "unknown_job":
            self.bs._events_to_send.append({"timestamp": self.bs.time(), "type": "EXECUTE_JOB",
                                            "data": {"job_id": "w0!no_such_job", "alloc": "0"}})
            return
        if mode == "outside":
            job.allocation = ProcSet((1000, 1000 + job.requested_resources - 1))
        elif mode == "double":
            job.allocation = ProcSet((0, job.requested_resources - 1))
        elif mode == "bad_size":
            job.allocation = ProcSet((0, job.requested_resources))
        self.bs.execute_jobs([job])

    def onJobCompletion(self, job):
        pass
