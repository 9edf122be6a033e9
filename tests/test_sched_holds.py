"""The holds-only availability model of the shared core (iosched.sched.holds)."""

import math
import random
from types import SimpleNamespace

import pytest
from procset import ProcSet

from iosched.errors import ProfileError
from iosched.sched.core import Scheduler
from iosched.sched.holds import HoldsOnly
from iosched.sched.machine import Machine
from iosched.sched.placer import Allocation
from iosched.sched.profile import AvailabilityProfile


def test_release_and_overrun_semantics_are_the_profiles():
    p = HoldsOnly(ProcSet((0, 9)), {}, now=0.0)
    h = p.reserve(0.0, 50.0, ProcSet(1, 2))
    p.advance(10.0)
    p.release(h, at=8.0)          # an end reported before now counts as now
    assert h.end == 10.0 and not h.live and p.free_count() == 10
    h2 = p.reserve(10.0, 20.0, ProcSet(3))
    p.advance(30.0)               # past its end: free, as in the profile
    assert p.free_count() == 10
    p.release(h2, at=30.0)        # already over (an overrun): unchanged
    assert h2.end == 20.0
    assert len(p.resources) == 10 and p.pool_totals == {}


def test_a_resource_held_twice_is_refused():
    p = HoldsOnly(ProcSet((0, 9)), {"bb": 5.0}, now=0.0)
    p.reserve(0.0, math.inf, ProcSet((2, 4)), tag="a")
    with pytest.raises(ProfileError, match="already held"):
        p.reserve(0.0, 10.0, ProcSet(4, 5))
    assert p.held_mask == 0b11100           # nothing changed by the refusal
    with pytest.raises(ProfileError, match="not managed"):
        p.reserve(0.0, 10.0, ProcSet(12))
    with pytest.raises(ProfileError, match="from now"):
        p.reserve(5.0, 10.0, ProcSet(6))      # no future
    with pytest.raises(ProfileError, match="no pool"):
        p.reserve(0.0, 10.0, ProcSet(6), {"bb": 1.0})
    p.advance(1.0)
    with pytest.raises(ProfileError, match="go back"):
        p.advance(0.5)
    assert p.pool_totals == {"bb": 5.0}


def test_held_now_equals_the_profiles_free_capacity_now():
    """Random starts (at now, on free resources), early ends, overruns and
    time steps: after every step the resources held now are those the
    availability profile has taken at now, and both refuse the same
    double uses."""
    rnd = random.Random(4)
    n = 40
    prof = AvailabilityProfile(ProcSet((0, n - 1)), {}, now=0.0)
    holds = HoldsOnly(ProcSet((0, n - 1)), {}, now=0.0)
    live = []
    now = 0.0
    for _ in range(400):
        op = rnd.random()
        if op < 0.45:
            mask = 0
            for k in rnd.sample(range(n), rnd.randint(1, 6)):
                mask |= 1 << k
            end = now + rnd.choice([0.5, 3.0, 10.0, math.inf])
            try:
                r = prof.reserve(now, end, mask)
            except ProfileError:
                with pytest.raises(ProfileError):
                    holds.reserve(now, end, mask)
                continue
            live.append((r, holds.reserve(now, end, mask)))
        elif op < 0.7 and live:
            r, h = live.pop(rnd.randrange(len(live)))
            at = now - rnd.choice([0.0, 0.5])
            prof.release(r, at=at)
            holds.release(h, at=at)
            assert h.end == r.end
        else:
            now += rnd.choice([0.5, 1.0, 4.0])
            prof.advance(now)
            holds.advance(now)
        assert holds.free_count() == prof.free_count(now)
        assert holds.held_mask == ((1 << n) - 1) & ~prof.free_mask(now)


class _StartGiven:
    """A policy that starts each waiting job on the resources in its
    request, as a policy with its own availability model does."""

    def schedule(self, s, now):
        for job in s.queue:
            s.start(job, now, Allocation(job.request))


def _bjob(i, res, walltime):
    return SimpleNamespace(id=f"w0!{i}", requested_resources=len(res), requested_time=walltime,
                           submit_time=0.0, json_dict={}, res=res)


def test_core_with_holds_only_refuses_a_resource_given_twice_and_keeps_overruns():
    launcher = SimpleNamespace(started=[], start=lambda rec: launcher.started.append(rec.job.id),
                               reject=lambda job, reason: None, call_me_later=lambda t: None)
    s = Scheduler(_StartGiven(), launcher=launcher, profile=HoldsOnly,
                  read_job=lambda b: (b.requested_resources, b.requested_time, {}, ProcSet(*b.res)))
    s.begin(Machine([{"id": i} for i in range(4)]), 0.0)
    assert isinstance(s.profile, HoldsOnly)
    s.submit(_bjob(0, [0, 1], 10.0))
    s.schedule(0.0)
    assert launcher.started == ["w0!0"] and s.profile.free_count() == 2
    s.schedule(12.0)                        # w0!0 runs past its walltime: still held
    assert s.profile.free_count() == 2 and s.stats["overruns"] == 1
    s.submit(_bjob(1, [1, 2], 10.0))
    with pytest.raises(ProfileError, match="already held"):
        s.schedule(12.5)
    s.end("w0!0", "COMPLETED_WALLTIME_REACHED", 12.6)
    s.schedule(12.6)
    assert launcher.started == ["w0!0", "w0!1"] and s.profile.free_count() == 2
