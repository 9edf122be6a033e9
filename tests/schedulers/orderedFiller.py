"""pybatsim's FillerSched with a deterministic tie-break (test fixture).

pybatsim 3.2.1's ``schedulers/fillerSched.py`` walks ``set(self.openJobs)``,
a set of Job objects hashed by ``id()``: the order in which it considers open
jobs depends on CPython object addresses and changes from run to run, with
the real Batsim as with any engine. This subclass keeps FillerSched's rule
(start, in turn, every open job that fits on the first free resources, then
consume 0.005 s) and only fixes the order: the option ``order`` lists job ids
(``w0!id``) and jobs are considered in that order. Given the order observed
in a golden run (its jobs sorted by starting time) it makes the same
decisions as the golden run's FillerSched did.
"""

from itertools import islice

from procset import ProcSet
from schedulers.fillerSched import FillerSched


class OrderedFiller(FillerSched):
    def scheduleJobs(self):
        rank = {jid: i for i, jid in enumerate(self.options.get("order", []))}
        scheduled = []
        for job in sorted(self.openJobs, key=lambda j: (rank.get(j.id, len(rank)), j.id)):
            if job.requested_resources <= len(self.availableResources):
                job.allocation = ProcSet(*islice(self.availableResources, job.requested_resources))
                scheduled.append(job)
                self.availableResources -= job.allocation
                self.openJobs.remove(job)
        self.bs.consume_time(self.sched_delay)
        if scheduled:
            self.bs.execute_jobs(scheduled)
