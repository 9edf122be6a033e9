"""Tests of iosched.sched.profile.AvailabilityProfile.

The profile is checked against a brute-force model: a list of reservations
(python sets of ints, pool amounts), from which the free capacity at any
instant is recomputed. Hypothesis drives random sequences of reservations,
removals, early releases and time advances (RuleBasedStateMachine).
"""

import math

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule
from procset import ProcSet

from iosched.sched.profile import INF, AvailabilityProfile, Reservation, lowest_bits, lowest_ids
from iosched.sched.timeline import mask_of, procset_of_mask
from iosched.errors import ProfileError

POOL_CHOICES = [{}, {"bb": 8.0}, {"bb": 8.0, "bw": 4.0}]
# amounts are multiples of 0.5 (exact in binary) so that the model needs no tolerance
AMOUNTS = st.integers(0, 12).map(lambda k: k / 2)
DURATIONS = st.one_of(st.integers(0, 12).map(float), st.just(INF), st.integers(1, 24).map(lambda k: k / 4))


class Model:
    """Brute-force reference: free capacity recomputed from reservations."""

    def __init__(self, n, pools, now):
        self.all = set(range(n))
        self.totals = dict(pools)
        self.now = now
        self.res = {}  # rid -> [start, end, set, pools]

    def free(self, t):
        free = set(self.all)
        pools = dict(self.totals)
        for start, end, rs, rp in self.res.values():
            if start <= t < end:
                assert rs <= free, f"model: overlapping reservations at {t}"
                free -= rs
                for k, v in rp.items():
                    pools[k] -= v
        for k, v in pools.items():
            assert v >= 0, f"model: pool {k} over-committed at {t}"
        return free, pools

    def points(self, t, duration):
        """Instants where the free capacity on [t, t + duration) may change."""
        end = t + duration
        pts = {t}
        for start, stop, _, _ in self.res.values():
            for x in (start, stop):
                if t < x < end:
                    pts.add(x)
        return sorted(pts)

    def candidates(self, t, duration, nb, pools):
        """Set of resources free throughout the window, or None if a pool lacks."""
        cand = set(self.all)
        for p in self.points(t, duration):
            free, fp = self.free(p)
            cand &= free
            for k, v in pools.items():
                if fp[k] < v:
                    return None
        return cand

    def feasible(self, t, duration, nb, pools):
        cand = self.candidates(t, duration, nb, pools)
        return cand is not None and len(cand) >= nb

    def breakpoints(self):
        pts = {self.now}
        for start, end, _, _ in self.res.values():
            pts.update(x for x in (start, end) if self.now <= x < INF)
        return sorted(pts)


def pset(s):
    """ProcSet of a python set of ints."""
    return ProcSet(*sorted(s))


class ProfileMachine(RuleBasedStateMachine):
    """Random reserve / remove / release / advance sequences vs. the model."""

    @initialize(n=st.integers(1, 8), pools=st.sampled_from(POOL_CHOICES), now=st.integers(0, 5))
    def init(self, n, pools, now):
        self.profile = AvailabilityProfile(ProcSet((0, n - 1)), pools, now=float(now))
        self.model = Model(n, pools, float(now))
        self.live = []  # Reservation objects (may have ended)
        self.n = n
        self.pool_names = sorted(pools)

    def draw_pools(self, data):
        return {k: data.draw(AMOUNTS.filter(lambda a, k=k: a <= self.model.totals[k]))
                for k in self.pool_names if data.draw(st.booleans())}

    @rule(data=st.data(), duration=DURATIONS, after_off=st.integers(0, 15))
    def reserve_earliest(self, data, duration, after_off):
        nb = data.draw(st.integers(0, self.n))
        pools = self.draw_pools(data)
        after = self.model.now + after_off
        t, res = self.profile.earliest_start(nb, duration, pools, after=after)
        # candidate instants of the model: after and every breakpoint past it
        cands = [after] + [x for x in self.model.breakpoints() if x > after]
        if t == INF:
            assert len(res) == 0
            assert not any(self.model.feasible(c, duration, nb, pools) for c in cands)
            return
        assert t >= after and t in cands
        assert len(res) == nb
        cand = self.model.candidates(t, duration, nb, pools)
        assert cand is not None and set(res) <= cand, "earliest_start returned an infeasible slot"
        # deterministic choice: the lowest ids among the window's free resources
        assert set(res) == set(sorted(cand)[:nb])
        for c in cands:
            if c >= t:
                break
            assert not self.model.feasible(c, duration, nb, pools), (
                f"feasible start {c} earlier than returned {t}")
        # fit_at agrees, and so do the mask paths
        assert self.profile.fit_at(t, nb, duration, pools) == res
        assert self.profile.earliest_mask(nb, duration, pools, after=after) == (t, mask_of(res))
        assert self.profile.fit_mask(t, nb, duration, pools) == mask_of(res)
        if t > after:
            assert self.profile.fit_at(after, nb, duration, pools) is None
        r = self.profile.reserve(t, t + duration, res, pools, tag="e")
        self.record(r, t, t + duration, res, pools)

    @rule(data=st.data(), start_off=st.integers(0, 15), duration=DURATIONS)
    def reserve_direct(self, data, start_off, duration):
        start = self.model.now + start_off
        res = set(data.draw(st.lists(st.integers(0, self.n - 1), max_size=self.n)))
        pools = self.draw_pools(data)
        before = list(self.profile.segments())
        ok = all(res <= self.model.free(p)[0] and all(self.model.free(p)[1][k] >= v for k, v in pools.items())
                 for p in self.model.points(start, duration)) if duration > 0 else True
        if ok:
            r = self.profile.reserve(start, start + duration, pset(res), pools)
            self.record(r, start, start + duration, res, pools)
        else:
            with pytest.raises(ProfileError):
                self.profile.reserve(start, start + duration, pset(res), pools)
            assert list(self.profile.segments()) == before, "failed reserve changed the profile"

    def record(self, r, start, end, res, pools):
        assert isinstance(r, Reservation)
        if end > start:
            self.model.res[r.rid] = [start, end, set(res), {k: v for k, v in pools.items() if v > 0}]
        self.live.append(r)

    @precondition(lambda self: self.live)
    @rule(data=st.data())
    def remove(self, data):
        r = self.live.pop(data.draw(st.integers(0, len(self.live) - 1)))
        self.profile.remove(r)
        self.model.res.pop(r.rid, None)
        with pytest.raises(ProfileError):
            self.profile.remove(r)

    @precondition(lambda self: self.live)
    @rule(data=st.data(), duration=DURATIONS, after_off=st.integers(0, 15))
    def what_if_without(self, data, duration, after_off):
        """Inside ``without(r)`` the answers are those after ``remove(r)``,
        and on exit the profile is exactly as before."""
        r = data.draw(st.sampled_from(self.live))
        nb = data.draw(st.integers(0, self.n))
        pools = self.draw_pools(data)
        after = self.model.now + after_off
        before = list(self.profile.segments())
        changes = self.profile.changes
        with self.profile.without(r):
            inside = self.profile.earliest_start(nb, duration, pools, after=after)
            inside_fit = self.profile.fit_at(after, nb, duration, pools)
        assert list(self.profile.segments()) == before
        assert self.profile.changes == changes
        self.profile.check_consistency()
        # the same questions after a real removal, then the reservation again
        self.live.remove(r)
        self.profile.remove(r)
        model = self.model.res.pop(r.rid, None)
        assert self.profile.earliest_start(nb, duration, pools, after=after) == inside
        assert self.profile.fit_at(after, nb, duration, pools) == inside_fit
        if model is not None and model[1] > self.model.now:
            start, end, res, rp = model
            again = self.profile.reserve(max(start, self.model.now), end, pset(res), rp)
            self.record(again, max(start, self.model.now), end, res, rp)

    @precondition(lambda self: self.live)
    @rule(data=st.data(), at_off=st.integers(0, 15))
    def release(self, data, at_off):
        r = data.draw(st.sampled_from(self.live))
        at = self.model.now + at_off
        old_end = r.end
        self.profile.release(r, at=at)
        if r.rid in self.model.res:
            m = self.model.res[r.rid]
            new_end = max(at, m[0]) if at < m[1] else m[1]
            m[1] = new_end
            assert r.end == new_end
        else:
            assert r.end == old_end

    @rule(dt=st.one_of(st.integers(0, 10).map(float), st.floats(0, 10)))
    def advance(self, dt):
        new_now = self.model.now + dt
        future_before = [seg for seg in self.profile.segments() if seg[1] > new_now]
        self.profile.advance(new_now)
        self.model.now = new_now
        after = list(self.profile.segments())
        # the future is unchanged: same segments, the first one clipped at new_now
        assert len(after) == len(future_before)
        assert after[0][0] == new_now
        for (s0, e0, r0, p0), (s1, e1, r1, p1) in zip(future_before, after):
            assert (max(s0, new_now), e0, r0, p0) == (s1, e1, r1, p1)
        with pytest.raises(ProfileError):
            self.profile.advance(new_now - 1)
        assert all(r.end > new_now for r in self.profile.reservations())

    @invariant()
    def matches_model(self):
        if not hasattr(self, "profile"):
            return
        self.profile.check_consistency()
        pts = self.model.breakpoints()
        samples = set(pts) | {(a + b) / 2 for a, b in zip(pts, pts[1:])} | {pts[-1] + 1}
        for t in sorted(samples):
            free, pools = self.model.free(t)  # asserts no over-commit in the model
            pfree, ppools = self.profile.free_at(t)
            assert set(pfree) == free, f"t={t}: profile {pfree} model {sorted(free)}"
            assert self.profile.free_count(t) == len(free)
            for k, v in pools.items():
                assert ppools[k] == pytest.approx(v, abs=1e-9)
        # the step function has no redundant breakpoint
        segs = list(self.profile.segments())
        for a, b in zip(segs, segs[1:]):
            assert (a[2], a[3]) != (b[2], b[3])


TestProfileMachine = ProfileMachine.TestCase
TestProfileMachine.settings = settings(max_examples=300, stateful_step_count=30, deadline=None,
                                       suppress_health_check=[HealthCheck.too_slow])


# ---------------------------------------------------------------- unit tests
def test_empty_profile_starts_now():
    p = AvailabilityProfile(ProcSet((0, 3)), now=5.0)
    t, res = p.earliest_start(3, 10.0)
    assert t == 5.0 and res == ProcSet((0, 2))
    assert p.free_at(100.0) == (ProcSet((0, 3)), {})


def test_earliest_start_waits_for_release_and_respects_hole():
    p = AvailabilityProfile(ProcSet((0, 3)))
    p.reserve(0, 10, ProcSet((0, 1)))          # 2 nodes busy until 10
    p.reserve(5, 20, ProcSet(2))                # node 2 busy on [5, 20)
    # 3 nodes for 4 s: [0,4) has only 2 free -> must wait until 10 ({0,1,3} free)
    t, res = p.earliest_start(3, 4.0)
    assert t == 10.0 and res == ProcSet((0, 1), 3)
    # 2 nodes for 5 s fit right now on {2, 3} (node 2 is free until 5)
    assert p.earliest_start(2, 5.0) == (0.0, ProcSet((2, 3)))
    # but not for 6 s: node 2 is taken at 5; next start is at 10
    assert p.earliest_start(2, 6.0) == (10.0, ProcSet((0, 1)))


def test_infinite_duration_and_blocked_forever():
    p = AvailabilityProfile(ProcSet((0, 1)))
    r = p.reserve(0, INF, ProcSet(0))
    assert p.earliest_start(1, INF) == (0.0, ProcSet(1))
    assert p.earliest_start(2, 1.0) == (INF, ProcSet())
    p.release(r, at=3.0)
    assert r.end == 3.0
    assert p.earliest_start(2, INF) == (3.0, ProcSet((0, 1)))


def test_release_early_frees_the_rest():
    p = AvailabilityProfile(ProcSet((0, 3)), {"bb": 10.0})
    r = p.reserve(0, 100, ProcSet((0, 3)), {"bb": 6.0})
    assert p.earliest_start(1, 1.0, {"bb": 5.0}) == (100.0, ProcSet(0))
    p.advance(40.0)
    p.release(r, at=40.0)                         # finished 60 s before its walltime
    assert p.earliest_start(4, 1.0, {"bb": 10.0}) == (40.0, ProcSet((0, 3)))
    assert len(p) == 1 and p.reservations() == []


def test_pools_tolerate_float_sums():
    p = AvailabilityProfile(ProcSet((0, 9)), {"bw": 0.3})
    a = p.reserve(0, 10, ProcSet(), {"bw": 0.1})
    b = p.reserve(0, 10, ProcSet(), {"bw": 0.2})  # 0.1 + 0.2 > 0.3 in floating point
    with pytest.raises(ProfileError):
        p.reserve(0, 10, ProcSet(), {"bw": 0.01})
    p.remove(a)
    p.remove(b)
    assert p.free_at(0)[1] == {"bw": 0.3}
    assert len(p) == 1


def test_over_commit_raises_and_changes_nothing():
    p = AvailabilityProfile(ProcSet((0, 3)), {"bb": 4.0})
    p.reserve(2, 8, ProcSet((1, 2)), {"bb": 3.0})
    before = list(p.segments())
    with pytest.raises(ProfileError):
        p.reserve(0, 3, ProcSet(2))               # node 2 taken at 2
    with pytest.raises(ProfileError):
        p.reserve(7, 9, ProcSet(3), {"bb": 1.5})  # only 1.0 left until 8
    with pytest.raises(ProfileError):
        p.reserve(0, 1, ProcSet(7))               # unknown resource
    with pytest.raises(ProfileError):
        p.reserve(0, 1, ProcSet(), {"nope": 1})   # unknown pool
    assert list(p.segments()) == before
    assert issubclass(ProfileError, ValueError)


def test_invalid_requests_raise():
    p = AvailabilityProfile(ProcSet((0, 3)), {"bb": 4.0}, now=10.0)
    with pytest.raises(ProfileError):
        p.earliest_start(5, 1.0)
    with pytest.raises(ProfileError):
        p.earliest_start(-1, 1.0)
    with pytest.raises(ProfileError):
        p.earliest_start(1, -1.0)
    with pytest.raises(ProfileError):
        p.earliest_start(1, math.nan)
    with pytest.raises(ProfileError):
        p.earliest_start(1, 1.0, {"bb": 5.0})
    with pytest.raises(ProfileError):
        p.reserve(5.0, 20.0, ProcSet(0))          # in the past
    with pytest.raises(ProfileError):
        p.free_at(9.0)
    other = AvailabilityProfile(ProcSet((0, 3)))
    r = other.reserve(0, 1, ProcSet(0))
    with pytest.raises(ProfileError):
        p.remove(r)
    with pytest.raises(ProfileError):
        AvailabilityProfile([0, 1])
    with pytest.raises(ProfileError):
        AvailabilityProfile(ProcSet(0), {"bb": -1.0})


def test_among_and_chooser():
    p = AvailabilityProfile(ProcSet((0, 7)))
    t, res = p.earliest_start(2, 1.0, among=ProcSet((4, 7)))
    assert (t, res) == (0.0, ProcSet((4, 5)))
    highest = lambda cand, n: ProcSet(*list(cand)[-n:])
    assert p.earliest_start(3, 1.0, chooser=highest) == (0.0, ProcSet((5, 7)))
    with pytest.raises(ProfileError):
        p.earliest_start(2, 1.0, chooser=lambda cand, n: ProcSet(0))


@given(st.lists(st.integers(0, 200), unique=True), st.integers(0, 201))
def test_lowest_bits_is_lowest_ids(ids, count):
    mask = mask_of(ProcSet(*ids))
    assert procset_of_mask(mask) == ProcSet(*ids)
    if count > len(ids):
        with pytest.raises(ProfileError):
            lowest_bits(mask, count)
    else:
        assert procset_of_mask(lowest_bits(mask, count)) == lowest_ids(ProcSet(*ids), count)


def test_reserve_takes_a_mask_and_counts_changes():
    p = AvailabilityProfile(ProcSet((0, 7)))
    assert p.changes == 0 and not p.has_pools
    r = p.reserve(0, 10, 0b1010)
    assert r.resources == ProcSet(1, 3) and r.mask == 0b1010
    assert p.free_mask(5) == 0b11110101 and p.free_count(5) == 6
    assert p.changes == 1
    with pytest.raises(ProfileError):
        p.reserve(0, 1, 1 << 8)                   # not managed
    with pytest.raises(ProfileError):
        p.reserve(0, 1, -1)
    with pytest.raises(ProfileError):
        p.reserve(5, 6, 0b10)                     # taken
    assert p.changes == 1
    with p.without(r):
        assert p.free_count(5) == 8
        assert p.earliest_mask(8, 1.0) == (0.0, 0xFF)
    assert p.free_count(5) == 6 and len(p) == 2
    p.remove(r)
    assert p.changes == 2 and len(p) == 1
    with pytest.raises(ProfileError):
        p.without(r)


@given(st.lists(st.integers(0, 30), unique=True), st.integers(0, 31))
def test_lowest_ids(ids, count):
    cand = ProcSet(*ids)
    if count > len(ids):
        with pytest.raises(ProfileError):
            lowest_ids(cand, count)
    else:
        assert list(lowest_ids(cand, count)) == sorted(ids)[:count]


def test_many_reservations_stay_compact():
    """Breakpoints stay O(live reservations) through reserve/release/advance."""
    p = AvailabilityProfile(ProcSet((0, 99)))
    live = []
    for i in range(2000):
        now = float(i)
        p.advance(now)
        t, res = p.earliest_start(1 + (i * 37) % 50, 5.0 + (i * 13) % 40)
        live.append(p.reserve(t, t + 5.0 + (i * 13) % 40, res))
        if i % 3 == 0:
            p.release(live[i // 2], at=now)
    assert len(p) <= 2 * len(p.reservations()) + 1
    p.check_consistency()
