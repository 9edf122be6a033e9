"""Baseline batch schedulers for Batsim 4.2.1 (pybatsim 3.2.1).

Launch with the pybatsim launcher, which instantiates the class named after
the file (``Baseline``)::

    pybatsim schedulers/baseline.py -o '{"policy": "easy"}'

Option ``policy`` (default ``"easy"``):

``fcfs``
    First come, first served without backfilling: jobs start in submission
    order; the first job that does not fit blocks the queue.
``easy``
    EASY backfilling (Lifka 1995, "The ANL/IBM SP scheduling system";
    Mu'alem & Feitelson 2001, IEEE TPDS 12(6)), FCFS queue: the first job
    that does not fit gets a reservation at its earliest start; later jobs
    start now if they do not delay it.
``easy-sjf``
    EASY backfilling with the queue sorted by requested walltime, shortest
    first (ties in submission order).
``conservative``
    Conservative backfilling (Mu'alem & Feitelson 2001): every waiting job
    gets a reservation in submission order; a job may start early only if no
    earlier reservation is delayed; reservations are compressed when a job
    ends before its walltime.
``filler``
    Start every job that fits now, in submission order; no reservation.

The requested walltime is the runtime estimate; a job without walltime holds
its resources until it completes. Jobs requesting no resource or more than
the machine's compute resources are rejected (REJECT_JOB) with a logged
reason. Each policy is order x policy on the shared core
(:mod:`iosched.sched`) with the first-fit placer.
"""

from iosched.errors import InputError
from iosched.sched.adapter import PybatsimScheduler
from iosched.sched.core import Scheduler
from iosched.sched.orders import fcfs, sjf
from iosched.sched.placer import FirstFit
from iosched.sched.policies import Conservative, Easy, Fcfs, Filler

__all__ = ["Baseline", "POLICIES", "OPTIONS", "KNOWN_OPTIONS"]

#: policy name -> (policy class, queue order)
POLICIES = {
    "fcfs": (Fcfs, fcfs),
    "easy": (Easy, fcfs),
    "easy-sjf": (Easy, sjf),
    "conservative": (Conservative, fcfs),
    "filler": (Filler, fcfs),
}

#: options this scheduler understands (name -> description), checked before
#: the scheduler starts (:mod:`iosched.sched.options`)
OPTIONS = {
    "policy": f"one of {', '.join(POLICIES)} (default easy)",
}

#: the option names (kept for callers of the former tuple)
KNOWN_OPTIONS = tuple(OPTIONS)


class Baseline(PybatsimScheduler):
    """FCFS, EASY (FCFS or SJF order), conservative backfilling or filler.

    :param options: pybatsim options dict; ``options["policy"]`` is one of
        :data:`POLICIES` (default ``"easy"``).
    :raises InputError: on an unknown policy (message names the option and
        the accepted values) or an option not in :data:`OPTIONS`.
    """

    OPTIONS = OPTIONS

    def make_core(self, options: dict) -> Scheduler:
        policy = options.get("policy", "easy")
        if policy not in POLICIES:
            raise InputError(
                f"schedulers/baseline.py: option policy={policy!r} is unknown; "
                f"expected one of: {', '.join(POLICIES)}")
        self.policy = policy
        make, order = POLICIES[policy]
        return Scheduler(make(), FirstFit(), order, name=type(self).__name__)
