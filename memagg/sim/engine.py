# Licensed under the Apache License, Version 2.0 (the "License"); you may
# not use this file except in compliance with the License. You may obtain
# a copy of the License at
#
#      http://www.apache.org/licenses/LICENSE-2.0
#
# Unless required by applicable law or agreed to in writing, software
# distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
# WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
# License for the specific language governing permissions and limitations
# under the License.

"""memagg-sim's virtual-time loop: one memory basis replayed over a trace
through the consolidation round planner (memagg.scheduler.consolidation,
the one memagg-scheduler runs).

At every step t, in this order:

1. Migrations due at t land (the VM now runs on its destination) and
   hosts emptied by a round are powered off once their VMs have left.
2. VMs whose last step was t - 1 leave; VMs whose first step is t arrive:
   on the trace's initial host (powered on if it was off), else where the
   placement plug-in puts them among the hosts not busy with a migration
   (waking one if none fits); a VM no host can take is rejected and not
   simulated.
3. With the reservoir model (memagg.sim.reservoir), hosts whose VMs'
   working sets exceed their memory borrow remote memory for them, and
   the remote share of a VM's working set adds its penalty to its
   host's cpu.
   With the host reclaim model (memagg.sim.host_reclaim), the
   [host_reclaim] controller pages the running VMs' cold memory out and
   what their working sets fault back is counted; from here on a VM's
   memory is what it has in use (its WSS max-average with a balloon, its
   booked memory without one, less what host reclaim holds paged out).
4. Accounting: hosts on, hosts whose VMs' working sets (the trace's
   wss_mb, not the max-average) exceed their memory and the remote
   memory their VMs hold (memory overload) and hosts whose VMs use more
   cores than they have (cpu overload). Then each active host's
   utilisation: cpu = cores its VMs use / its cores; mem = what its
   VMs' memory counts as in the basis (wss: their WSS max-average;
   booked: their booked memory) / its memory. Appended to the host's
   histories, which start empty when it is powered on and keep the last
   ``history_length`` samples. The memory of a host whose VMs hold
   remote memory counts ``remote_weight`` of it too, as
   memagg-scheduler counts a host's usable memory. Counting booked
   memory in the detectors too makes the booked basis Neat with booked
   RAM as its memory: with WSS there, every host packed full by booked
   memory but using little of it would be found underloaded, and kept,
   every round.
5. Every ``round_steps`` steps, a round: plan_round over the hosts not
   busy with a migration (a host with one in flight, as source,
   destination or waiting to power off, sits the round out, as memagg-
   scheduler runs one migration per host at a time); its power-ons apply
   at once, its migrations land ``migration_steps`` later (at least one:
   the VM runs on its source for the rest of the step), its power-offs
   when the host's migrations have landed. The round knows when each VM
   it may move last migrated (round_budget.Recent): the time its
   migration was planned; and how many migrations each host took part in
   within the hour (those planned less than an hour of steps before).

Speed: the trace is numpy arrays (steps x VMs) and per-host sums are
bincounts. Hosts keep their histories as lists, which the detectors read
as they are. Before a round the engine runs the round's own detection on
each host (consolidation.detect; the planner is given what it found
rather than detecting again) and skips the round when no host is under-
or overloaded. Only the hosts found so get a VmState
per VM, whose cpu history is a sequence read from the trace when a
plug-in looks at it. Every other host gets one VmState standing for all
its VMs (their sums), which is all placement reads of a host whose VMs
stay; if the planner ever moved one, the run stops. Of the inactive hosts
a round sees only the first few of each capacity (see _states).
"""
import collections
import dataclasses
import gc
import math
import time

import numpy as np

from memagg.drivers.consolidation import base
from memagg.scheduler import consolidation
from memagg.scheduler import plans
from memagg.scheduler import round_budget
from memagg.sim import histories

#: Inactive hosts of each capacity a round is shown (see _states).
SPARE_INACTIVE = 4


@dataclasses.dataclass
class Settings:
    """How the loop runs: history kept, migration time and round period
    (both in steps), and the share of the remote memory its VMs hold that
    counts as a host's memory ([consolidation] remote_weight)."""

    history_length: int = 288
    migration_steps: int = 1
    round_steps: int = 1
    remote_weight: float = 0.0


@dataclasses.dataclass
class Result:
    """What one basis did. Per step (arrays of the trace's length): hosts
    on, hosts in memory overload, hosts in cpu overload, migrations
    started, and in ``migrations_by_trigger`` those of each of the plans'
    reasons (``by_trigger``: their totals). Totals: power actions that
    took effect, rounds (and those whose plan was partial, with the VMs it
    could not place and the underloaded hosts it kept), VMs rejected on
    arrival, the loop's wall time; ``remote``, the reservoir.Stats of the
    reservoir model (None without it); ``reclaim``, the host_reclaim.Stats
    of the host reclaim model (None without it)."""

    basis: str
    step_s: float
    active_hosts: np.ndarray
    mem_overloaded: np.ndarray
    cpu_overloaded: np.ndarray
    migrations: np.ndarray
    migrations_by_trigger: dict = dataclasses.field(default_factory=dict)
    power_on: int = 0
    power_off: int = 0
    rounds: int = 0
    partial_rounds: int = 0
    unplaced: int = 0
    kept: int = 0
    rejected: list = dataclasses.field(default_factory=list)
    wall_s: float = 0.0
    remote: object = None
    reclaim: object = None

    @property
    def by_trigger(self):
        """{reason: migrations in all}, from migrations_by_trigger."""
        return {reason: int(steps.sum())
                for reason, steps in self.migrations_by_trigger.items()}


class Simulation:
    """One basis over one trace; ``run()`` returns a Result.

    ``initial``: each VM's initial host index (-1: to be placed);
    ``wss_maxavg``: steps x VMs WSS max-average (memagg.sim.maxavg);
    ``algorithms``: from consolidation.load_algorithms with this basis;
    ``reservoir``: a reservoir.Model of this trace and hosts (None: no
    remote memory); ``host_reclaim``: a host_reclaim.Model of this trace
    (None: every VM counts its WSS max-average, as with a balloon).
    """

    def __init__(self, trace, hosts, initial, wss_maxavg, algorithms,
                 basis, settings, reservoir=None, host_reclaim=None):
        self.trace, self.hosts = trace, hosts
        self.initial = initial
        self.maxavg = wss_maxavg
        self.host_reclaim = host_reclaim
        self.basis = basis
        self.settings = settings
        self.reservoir = reservoir
        # What a host's memory counts as: its memory and, with the
        # reservoir, remote_weight of what its VMs hold.
        self.usable = hosts.memory_mb.astype(float)
        self.algorithms = algorithms
        n_hosts, n_vms = len(hosts), trace.vms
        self.host_index = {name: h for h, name in enumerate(hosts.names)}
        self.vm_index = {vm: v for v, vm in enumerate(trace.vm_ids)}
        # Stand-ins' uuids start with a prefix no VM name starts with.
        prefix = '\x00'
        while any(vm.startswith(prefix) for vm in trace.vm_ids):
            prefix += '\x00'
        self._standins = [prefix + name for name in hosts.names]
        self._cpu_by_vm = None
        self._vm_made = {}
        self.spare_inactive = SPARE_INACTIVE
        # Hosts of each capacity (cores, memory), in name order.
        self._capacity_of = list(zip(hosts.cpus.tolist(),
                                     hosts.memory_mb.tolist()))
        by_capacity = collections.defaultdict(list)
        for h in sorted(range(n_hosts), key=lambda h: hosts.names[h]):
            by_capacity[self._capacity_of[h]].append(h)
        self._capacities = {c: np.array(members)
                            for c, members in by_capacity.items()}
        # When each VM last migrated, virtual seconds (-inf: never), and
        # the migrations of the last hour: (step, source, destination) and
        # their count per host.
        self.moved_at = np.full(n_vms, -np.inf)
        self.hour_steps = max(1, math.ceil(
            round_budget.HOUR_S / trace.step_s - 1e-9))
        self.last_hour = collections.deque()
        self.host_moves = np.zeros(n_hosts, dtype=int)
        self.host_of = np.full(n_vms, -1)
        self.rejected = np.zeros(n_vms, dtype=bool)
        self.active = np.ones(n_hosts, dtype=bool)
        self.window = algorithms.controls.fill_window
        self.histories = histories.HostHistories(
            n_hosts, settings.history_length)
        self.vm_peaks = histories.VmPeaks(
            trace.cpu, min(self.window, settings.history_length))
        # Migrations (and pending power-offs) each host takes part in.
        self.busy = np.zeros(n_hosts, dtype=int)
        self.landing = collections.defaultdict(list)
        self.power_off_at = collections.defaultdict(list)
        steps = trace.steps
        self.result = Result(
            basis=basis, step_s=trace.step_s,
            active_hosts=np.zeros(steps, dtype=int),
            mem_overloaded=np.zeros(steps, dtype=int),
            cpu_overloaded=np.zeros(steps, dtype=int),
            migrations=np.zeros(steps, dtype=int),
            remote=None if reservoir is None else reservoir.stats,
            reclaim=None if host_reclaim is None else host_reclaim.stats)
        order = np.argsort(trace.first, kind='stable')
        self._arrivals = np.split(order, np.searchsorted(
            trace.first[order], np.arange(1, steps)))
        order = np.argsort(trace.last, kind='stable')
        self._departures = np.split(order, np.searchsorted(
            trace.last[order], np.arange(0, steps - 1), side='right'))

    def run(self, progress=None):
        """Replay every step; ``progress(steps_done)`` after each.

        The cycle collector is off meanwhile: the loop makes no reference
        cycles (what it drops, reference counting frees), but it makes and
        drops thousands of objects a round, and at its thresholds the
        collector would scan every object alive dozens of times a run,
        the trace's included (a fifth of the wss basis' time).
        """
        started = time.perf_counter()
        collecting = gc.isenabled()
        gc.disable()
        try:
            for t in range(self.trace.steps):
                self.step(t)
                if progress is not None:
                    progress(t + 1)
        finally:
            if collecting:
                gc.enable()
        self.result.rejected = [self.trace.vm_ids[v]
                                for v in np.flatnonzero(self.rejected)]
        self.result.migrations_by_trigger = dict(
            sorted(self.result.migrations_by_trigger.items()))
        self.result.wall_s = time.perf_counter() - started
        return self.result

    def step(self, t):
        """Simulate step ``t`` (steps must be taken in order)."""
        self._land(t)
        if t:
            self.host_of[self._departures[t - 1]] = -1
        self._arrive(t, self._arrivals[t])
        if self.host_reclaim is not None:
            self.host_reclaim.step(t, self.host_of >= 0)
        sums = self._sums(t)
        if self.reservoir is not None:
            self._borrow(t, sums)
        self._account(t, sums)
        self._record(t, sums)
        if t % self.settings.round_steps == 0:
            self._round(t, sums)

    def _land(self, t):
        for v, src, dst in self.landing.pop(t, ()):
            self.busy[src] -= 1
            self.busy[dst] -= 1
            if self.host_of[v] == src:
                self.host_of[v] = dst
        for h in self.power_off_at.pop(t, ()):
            self.busy[h] -= 1
            if not self.active[h] or (self.host_of == h).any():
                continue
            self._power(h, False)

    def _power(self, h, on):
        self.active[h] = on
        self.histories.reset(h)
        if on:
            self.result.power_on += 1
        else:
            self.result.power_off += 1

    def _arrive(self, t, vms):
        if not len(vms):
            return
        given = self.initial[vms]
        for v, h in zip(vms[given >= 0], given[given >= 0]):
            if not self.active[h]:
                self._power(h, True)
            self.host_of[v] = h
        unplaced = vms[given < 0]
        if not len(unplaced):
            return
        sums = self._sums(t, previous=True)
        states, classes = self._states(t, sums, set(), self.spare_inactive)
        vm_states = self._vm_states(t, unplaced)
        result = self.algorithms.placement.place(states, vm_states)
        if self._exhausted(result.woken, classes):
            states, _ = self._states(t, sums, set(), spare=None)
            result = self.algorithms.placement.place(states, vm_states)
        for name in result.woken:
            self._power(self.host_index[name], True)
        for v in unplaced:
            dest = result.placements.get(self.trace.vm_ids[v])
            if dest is None:
                self.rejected[v] = True
            else:
                self.host_of[v] = self.host_index[dest]

    def _resident(self, t):
        """Each VM's memory at step ``t``: its WSS max-average, or with
        the host reclaim model its memory in use."""
        if self.host_reclaim is None:
            return self.maxavg[t]
        return self.host_reclaim.in_use_mb(t)

    def _sums(self, t, previous=False):
        """Per host: cores used, WSS, resident memory (_resident) and
        booked MiB of its VMs at step ``t`` (cpu at t - 1 if
        ``previous``, for placing arrivals before t's use is known)."""
        placed = np.flatnonzero(self.host_of >= 0)
        where = self.host_of[placed]
        n = len(self.hosts)
        cpu_t = max(t - 1, 0) if previous else t
        self._peaks_now = self.vm_peaks.at(t)
        return dict(
            peak=np.bincount(where, self._peaks_now[placed], n),
            count=np.bincount(where, minlength=n),
            cpu=np.bincount(where, self.trace.cpu[cpu_t, placed], n),
            wss=np.bincount(where, self.trace.wss_mb[t, placed], n),
            maxavg=np.bincount(where, self._resident(t)[placed], n),
            booked=np.bincount(where, self.trace.booked_mb[placed], n))

    def _borrow(self, t, sums):
        """The reservoir's step: sums['uncovered'], per host the working
        sets neither its memory nor remote memory holds; the penalty added
        to sums['cpu']; the usable memory of the step."""
        reserved = np.zeros(len(self.hosts))
        wss = self.trace.wss_mb[t]
        for moves in self.landing.values():
            for v, _, dst in moves:
                reserved[dst] += wss[v]
        sums['uncovered'] = self.reservoir.step(
            t, self.host_of, self.active, sums['wss'], reserved, sums['cpu'])
        weight = self.settings.remote_weight
        if weight:
            holders = np.flatnonzero(self.reservoir.held)
            self.usable = self.hosts.memory_mb + weight * np.bincount(
                self.host_of[holders], self.reservoir.held[holders],
                len(self.hosts))

    def _account(self, t, sums):
        active = self.active
        result = self.result
        result.active_hosts[t] = active.sum()
        over = (sums['uncovered'] > 0 if 'uncovered' in sums
                else sums['wss'] > self.hosts.memory_mb)
        result.mem_overloaded[t] = (active & over).sum()
        result.cpu_overloaded[t] = (
            active & (sums['cpu'] > self.hosts.cpus)).sum()

    def _record(self, t, sums):
        used = sums['booked' if self.basis == 'booked' else 'maxavg']
        self.histories.record(np.flatnonzero(self.active).tolist(),
                              sums['cpu'] / self.hosts.cpus,
                              used / self.usable)

    def _detect(self, candidates):
        """The round's detection (consolidation.detect) of the hosts of
        ``candidates`` it will unload: {host name: what it found}."""
        detect, algorithms = consolidation.detect, self.algorithms
        names = self.hosts.names
        cpu_hist, mem_hist = self.histories.cpu, self.histories.mem
        found = {}
        for h in candidates:
            low, high = detect(cpu_hist[h], mem_hist[h], algorithms)
            if low or high:
                found[names[h]] = low, high
        return found

    def _vm_states(self, t, vms):
        """VmStates of VMs ``vms`` (indices) at step ``t``: cpu histories
        of up to ``history_length`` samples since each started, read from
        the trace when a plug-in looks at them.

        A VM's VmState is made once and brought up to date in later rounds
        (the planner keeps none past its round): far cheaper than new
        objects for the thousands of VMs on the hosts a round unloads.
        """
        trace = self.trace
        if self._cpu_by_vm is None:
            # Each VM's samples side by side: its history is one slice.
            # Made where the loop runs, not copied to it.
            self._cpu_by_vm = np.ascontiguousarray(trace.cpu.T)
        rows, made, ids = self._cpu_by_vm, self._vm_made, trace.vm_ids
        lo = max(0, t - self.settings.history_length + 1)
        stop = t + 1
        # The peaks of the fill window: the trace's cpu is 0 before a VM
        # starts, and no sample is below 0, so the window may start
        # before the VM's history does.
        tops = self._peaks_now[vms]
        states = []
        for v, start, wss, top in zip(
                vms.tolist(), np.maximum(trace.first[vms], lo).tolist(),
                self._resident(t)[vms].tolist(), tops.tolist()):
            vm = made.get(v)
            if vm is None:
                vm = made[v] = base.VmState(
                    ids[v], histories.VmCpu(rows[v], start, stop, top), wss,
                    float(trace.booked_mb[v]))
            else:
                vm.cpu_history.reslice(start, stop, top)
                vm.wss_maxavg_mb = wss
            states.append(vm)
        return states

    def _states(self, t, sums, involved, spare):
        """HostStates of the hosts not busy: a VmState per VM on
        ``involved`` hosts, one standing for all on the others; of the
        inactive hosts, the first ``spare`` by name of each capacity (all
        if None).

        Placement wakes the first fitting inactive host in (capacity,
        name) order, so leaving out later hosts of a capacity changes
        nothing unless the round wakes every one given of it; the second
        value says how many of each capacity were given and left out, for
        the caller to check that.
        """
        names, cpus, memory = (self.hosts.names, self.hosts.cpus.tolist(),
                               self.usable.tolist())
        count = sums['count'].tolist()
        peak, maxavg, booked = (sums['peak'].tolist(),
                                sums['maxavg'].tolist(),
                                sums['booked'].tolist())
        cpu_hist, mem_hist = self.histories.cpu, self.histories.mem
        standins = self._standins
        real = {}
        if involved:
            on = np.flatnonzero(np.isin(self.host_of, list(involved)))
            on = on[np.argsort(self.host_of[on], kind='stable')]
            where = self.host_of[on].tolist()
            for h, vm in zip(where, self._vm_states(t, on)):
                real.setdefault(h, []).append(vm)
        states = []
        free = self.busy == 0
        given = collections.Counter()
        omitted = collections.Counter()
        for h in np.flatnonzero(free & self.active).tolist():
            if not count[h]:
                vms = []
            elif h in involved:
                vms = real[h]
            else:
                # Its VMs' peaks summed: what placement counts the host's
                # cpu as (round_views.Views).
                vms = [base.VmState(standins[h], [peak[h]],
                                    maxavg[h], booked[h])]
            states.append(base.HostState(
                names[h], cpus[h], memory[h], cpu_hist[h], mem_hist[h], vms,
                True))
        off = free & ~self.active
        for capacity, members in self._capacities.items():
            members = members[off[members]].tolist()
            chosen = members if spare is None else members[:spare]
            given[capacity] = len(chosen)
            omitted[capacity] = len(members) - len(chosen)
            states.extend(base.HostState(names[h], cpus[h], memory[h], [],
                                         [], [], False) for h in chosen)
        return states, {c: (given[c], omitted[c]) for c in given}

    def _exhausted(self, woken, classes):
        """Whether ``woken`` (host names) took every inactive host of a
        capacity that _states gave while leaving others out."""
        count = collections.Counter(self._capacity_of[self.host_index[name]]
                                    for name in woken)
        return any(count[c] >= given and omitted
                   for c, (given, omitted) in classes.items())

    def _recent(self, t, involved):
        """The round_budget.Recent of a round at step ``t``: when the VMs
        on ``involved`` hosts (the only ones a round may move) last
        migrated, and each host's migrations of the last hour (planned
        less than an hour of steps ago)."""
        last_hour = self.last_hour
        while last_hour and last_hour[0][0] <= t - self.hour_steps:
            _, src, dst = last_hour.popleft()
            self.host_moves[src] -= 1
            self.host_moves[dst] -= 1
        on = np.flatnonzero(np.isin(self.host_of, list(involved)))
        on = on[np.isfinite(self.moved_at[on])]
        ids, names = self.trace.vm_ids, self.hosts.names
        busy = np.flatnonzero(self.host_moves)
        return round_budget.Recent(
            now=t * self.trace.step_s,
            moved_at={ids[v]: when for v, when in zip(
                on.tolist(), self.moved_at[on].tolist())},
            host_moves={names[h]: count for h, count in zip(
                busy.tolist(), self.host_moves[busy].tolist())})

    def _round(self, t, sums):
        free = np.flatnonzero(self.active & (self.busy == 0)).tolist()
        detected = self._detect(free)
        self.result.rounds += 1
        if not detected:
            return
        involved = {self.host_index[name] for name in detected}
        recent = self._recent(t, involved)
        states, classes = self._states(t, sums, involved,
                                       self.spare_inactive)
        peak = histories.Peaks(self.window)
        plan = consolidation.plan_round(states, self.algorithms, recent,
                                        peak, detected)
        woken = [a.source_host for a in plan.actions
                 if a.action_type == plans.POWER_ON]
        if self._exhausted(woken, classes):
            states, _ = self._states(t, sums, involved, spare=None)
            plan = consolidation.plan_round(states, self.algorithms, recent,
                                            peak, detected)
        self._apply(t, plan)

    def _apply(self, t, plan):
        result = self.result
        if not plan.complete:
            result.partial_rounds += 1
            result.unplaced += len(plan.unplaced)
            result.kept += len(plan.kept)
        land = t + self.settings.migration_steps
        for action in plan.actions:
            h = self.host_index[action.source_host]
            if action.action_type == plans.POWER_ON:
                self._power(h, True)
            elif action.action_type == plans.POWER_OFF:
                self.busy[h] += 1
                self.power_off_at[land].append(h)
            else:
                v = self.vm_index.get(action.instance_uuid)
                if v is None:
                    raise RuntimeError(
                        'plan_round moved the VMs of host %s, which the '
                        'simulator\'s detection found neither under- nor '
                        'overloaded' % action.source_host)
                dst = self.host_index[action.dest_host]
                self.busy[h] += 1
                self.busy[dst] += 1
                self.moved_at[v] = t * self.trace.step_s
                self.last_hour.append((t, h, dst))
                self.host_moves[h] += 1
                self.host_moves[dst] += 1
                self.landing[land].append((v, h, dst))
                result.migrations[t] += 1
                steps = result.migrations_by_trigger.get(action.reason)
                if steps is None:
                    steps = result.migrations_by_trigger[action.reason] = (
                        np.zeros(len(result.migrations), dtype=int))
                steps[t] += 1
