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

"""Executing a consolidation plan through the compute service
(ALGORITHMS.md §3.5).

An audit's actions run in three phases: the hosts to wake are powered on,
then the VMs are live-migrated, then the emptied hosts are powered off.
memagg does not cut physical power: powering a host off disables its
compute service in Nova (reason ``memagg: consolidated``) and marks it
``standby`` in memagg's DB; powering it on enables the service and marks it
``active``.

Migrations run concurrently, but a host takes part (as source or
destination) in at most [consolidation] max_migrations_per_host of them at
once, across every plan this executor runs. Each migration is followed by
looking at the server every poll_interval seconds until Nova's task state
clears: it succeeded when the server is ACTIVE on the destination; when it
ended back on the source, or Nova could not be reached to start it, it is
tried again up to max_retries times, and Nova's reason for ending it (its
live-migration action's error, e.g. "No valid host was found" when the
destination's Placement inventory is full) is kept with the attempt; a
refusal by Nova (the VM or the destination cannot take part) ends it at
once with Nova's message. An attempt still running after
migration_timeout seconds is aborted through Nova's live-migration abort
API and ends failed once Nova let go of the VM, with the abort in its
error. A migration that did not succeed leaves its source powered on: the
power_off of that host is skipped.

Every change of state is written to the DB before the next step (a
migration's attempt is counted before Nova is asked), so a scheduler
stopped at any point is resumed by resume(): an attempt the DB says was
running is looked up in Nova and followed, or counted as done, or tried
again. Why an action failed or was skipped is appended to the audit's
reason as it happens; a failed migration's error is also on its row. The
audit ends succeeded when every action did, partial when some did and some
failed or were skipped, failed when none did.

An unexpected error (the DB failing, say) stops the execution where it is
and leaves the audit ``executing``, for resume() at the next start.
"""
import collections
import concurrent.futures
import threading

from oslo_log import log as logging

from memagg.common import coordination
from memagg.common import exceptions
from memagg.common import retry
from memagg.db import audits as db_audits
from memagg.db import hosts as db_hosts
from memagg.db import migrations as db_migrations
from memagg.drivers.compute_api import base as compute_api
from memagg.scheduler import grant_moves
from memagg.scheduler import live_migration
from memagg.scheduler import plans
from memagg.scheduler import states

LOG = logging.getLogger(__name__)

#: The reason Nova shows for the disabled compute service of a host that a
#: plan put on standby.
STANDBY_REASON = 'memagg: consolidated'
#: audits.reason of an audit found planning when the scheduler starts.
RESTARTED_WHILE_PLANNING = 'memagg-scheduler restarted while planning'


class _HostSlots:
    """How many migrations each host takes part in now. Hold ``changed``
    to call the methods; release() wakes whoever waits on it."""

    def __init__(self):
        self.changed = threading.Condition()
        self._busy = collections.Counter()

    def fits(self, hosts, limit):
        return all(self._busy[host] < limit for host in hosts)

    def take(self, hosts):
        self._busy.update(hosts)

    def release(self, hosts):
        self._busy.subtract(hosts)
        self.changed.notify_all()


class Executor:
    """Runs audits' plans through a compute API (``memagg.drivers.
    compute_api.base.load(conf)``), as [consolidation] in ``conf`` bounds
    them. ``compute_rpc`` is memagg-compute's RPC API, for the grants of
    the VMs that hold remote memory (memagg.scheduler.grant_moves)."""

    def __init__(self, conf, compute_api, compute_rpc=None):
        self.conf = conf
        self.compute_api = compute_api
        self.compute_rpc = compute_rpc
        self._slots = _HostSlots()
        #: Claims an audit or a copy before this executor works on it
        #: (memagg.common.coordination): with several workers, what one
        #: runs is not resumed by another.
        self.claim = coordination.no_claim
        #: Promotes a migrating VM's slabs in the local copy only
        #: (Reservoir.promote_for_migration); None: they keep it where
        #: it is.
        self.promote = None

    def grant_move(self, context, migration):
        """The GrantMove of ``migration``'s VM."""
        return grant_moves.GrantMove(context, migration, self.conf,
                                     compute=self.compute_rpc,
                                     promote=self.promote)

    def follow_copy(self, context, migration, left):
        """Follow the rebuild of ``migration``'s durability copy on its
        destination (``left`` MiB to go) in the background."""
        opts = self._opts
        # A daemon thread: a scheduler stopping does not wait for it (the
        # next start follows the copy again).
        threading.Thread(
            target=self._follow_copy, name='memagg-copy-%s' % migration.uuid,
            args=(context, migration, left, opts.poll_interval,
                  opts.migration_timeout), daemon=True).start()

    def _follow_copy(self, context, migration, left, interval, timeout):
        try:
            with self.claim('copy-%s' % migration.uuid) as claimed:
                if not claimed:
                    LOG.debug('Durability copy of migration %s is followed '
                              'by another worker', migration.uuid)
                    return
                self.grant_move(context, migration).follow_copy(
                    left, interval, timeout)
        except Exception:
            LOG.exception('Following the durability copy of migration %s '
                          'failed; the next start follows it again',
                          migration.uuid)

    @property
    def _opts(self):
        return self.conf.consolidation

    def execute(self, context, audit_uuid):
        """Run the plan of recommended audit ``audit_uuid`` to its end:
        the audit goes executing, then succeeded (every action succeeded)
        or failed (its reason counts and explains the actions that did
        not). Blocks until then. An audit the API made executing is run
        from the state in the DB, as a resumed one.

        Raises NotFound, or Conflict when the audit is neither recommended
        nor executing.
        """
        db_audits.audit_set_state(context, audit_uuid, states.EXECUTING,
                                  expected=(states.RECOMMENDED,
                                            states.EXECUTING))
        LOG.info('Executing audit %s', audit_uuid)
        self._run(context, audit_uuid)

    def resume(self, context, execute=True):
        """Finish what a stopped scheduler left: audits found planning
        fail (their round is lost; a new one can be asked for), audits
        found executing are run to their end from the state in the DB
        (without ``execute``, observe mode, they and the durability copies
        are left as they are). Audits and copies another live worker has
        claimed are left to it."""
        for audit in db_audits.audits_in_state(context, (states.PLANNING,)):
            with self.claim('audit-%s' % audit.uuid) as claimed:
                if not claimed:
                    continue
                LOG.warning('Audit %s was planning when its '
                            'memagg-scheduler stopped; marking it failed',
                            audit.uuid)
                try:
                    db_audits.audit_set_state(
                        context, audit.uuid, states.FAILED,
                        reason=RESTARTED_WHILE_PLANNING,
                        expected=(states.PLANNING,))
                except exceptions.Conflict:
                    # Its round was stored before the claim was taken.
                    continue
        if not execute:
            left = db_audits.audits_in_state(context, (states.EXECUTING,))
            if left:
                LOG.warning('%d audits found executing are left as they '
                            'are: [scheduler] mode = observe executes '
                            'nothing', len(left))
            return
        for migration in db_migrations.migrations_copying(context):
            self.follow_copy(context, migration,
                             migration.local_copy_left_mb)
        for audit in db_audits.audits_in_state(context, (states.EXECUTING,)):
            with self.claim('audit-%s' % audit.uuid) as claimed:
                if claimed:
                    self._resume(context, audit.uuid)

    def _resume(self, context, audit_uuid):
        # Read again under the claim: the worker that held it may have
        # finished the audit in between.
        if db_audits.audit_get(context, audit_uuid).state != states.EXECUTING:
            return
        LOG.info('Resuming the execution of audit %s', audit_uuid)
        try:
            self._run(context, audit_uuid)
        except Exception:
            # One audit's trouble must not keep the others stopped.
            LOG.exception('Resuming audit %s failed; it stays executing '
                          'until the next resumption (see resume)', audit_uuid)

    def _run(self, context, audit_uuid):
        actions = db_audits.audit_get(context, audit_uuid).actions
        for action in _of_type(actions, plans.POWER_ON):
            self._power(context, action, enable=True)

        actions = db_audits.audit_get(context, audit_uuid).actions
        unpowered = {a.source_host for a in _of_type(
            actions, plans.POWER_ON) if a.state != states.SUCCEEDED}
        self._migrate_all(context, audit_uuid, _of_type(
            actions, plans.MIGRATE), unpowered)

        actions = db_audits.audit_get(context, audit_uuid).actions
        for action in _of_type(actions, plans.POWER_OFF):
            left = [a for a in _of_type(actions, plans.MIGRATE)
                    if a.source_host == action.source_host
                    and a.state != states.SUCCEEDED]
            if left and action.state not in states.ACTION_FINAL_STATES:
                db_audits.audit_action_set_state(
                    context, action.id, states.SKIPPED,
                    note=live_migration.reason_line(
                        action, 'skipped: %d VM(s) did not leave the host '
                        '(%s)' % (len(left), ', '.join(
                            a.instance_uuid for a in left))))
                continue
            self._power(context, action, enable=False)
        self._finish(context, audit_uuid)

    def _finish(self, context, audit_uuid):
        audit = db_audits.audit_get(context, audit_uuid)
        counts = collections.Counter(a.state for a in audit.actions)
        if counts[states.SUCCEEDED] == len(audit.actions):
            db_audits.audit_set_state(context, audit_uuid, states.SUCCEEDED,
                                      expected=(states.EXECUTING,))
            LOG.info('Audit %s executed: %d actions succeeded', audit_uuid,
                     len(audit.actions))
            return
        summary = ('execution: %d of %d actions failed, %d skipped'
                   % (counts[states.FAILED], len(audit.actions),
                      counts[states.SKIPPED]))
        state = states.PARTIAL if counts[states.SUCCEEDED] else states.FAILED
        db_audits.audit_set_state(
            context, audit_uuid, state, expected=(states.EXECUTING,),
            reason='\n'.join(filter(None, [summary, audit.reason])))
        LOG.warning('Audit %s %s: %s', audit_uuid,
                    'partly executed' if state == states.PARTIAL else 'failed',
                    summary)

    # Power actions.

    def _power(self, context, action, enable):
        """Enable (power_on) or disable (power_off) the action's host's
        compute service, then record the host's state."""
        if action.state in states.ACTION_FINAL_STATES:
            return
        db_audits.audit_action_set_state(context, action.id, states.RUNNING)
        host = action.source_host
        error = self._call_with_retries(
            lambda: self.compute_api.set_host_enabled(
                host, enable, reason=None if enable else STANDBY_REASON))
        if error is not None:
            db_audits.audit_action_set_state(
                context, action.id, states.FAILED,
                note=live_migration.reason_line(action, 'failed: %s' % error))
            return
        try:
            db_hosts.host_set_state(
                context, host, states.ACTIVE if enable else states.STANDBY)
        except exceptions.NotFound:
            LOG.warning('Host %s has no row in memagg\'s DB; its compute '
                        'service was %s in Nova all the same', host,
                        'enabled' if enable else 'disabled')
        db_audits.audit_action_set_state(context, action.id, states.SUCCEEDED)

    def _call_with_retries(self, call):
        """Run ``call``, again after poll_interval while the compute
        service is unavailable, up to max_retries times; None on success,
        else why it failed."""
        policy = retry.Policy(self._opts.max_retries + 1,
                              self._opts.poll_interval)
        try:
            retry.call(call, what='The compute API', policy=policy,
                       retry_on=compute_api.ComputeApiUnavailable,
                       except_for=compute_api.ComputeApiNotConfigured)
        except compute_api.ComputeApiNotConfigured as exc:
            return str(exc)
        except compute_api.ComputeApiUnavailable as exc:
            return '%s (after %d attempts)' % (exc, policy.attempts)
        except compute_api.ComputeApiError as exc:
            return str(exc)
        return None

    # Migrations.

    def _migrate_all(self, context, audit_uuid, actions, unpowered):
        """Run the migrate ``actions`` not yet ended, those an attempt was
        left running first, then in plan order as their hosts have room."""
        migrations = db_migrations.migrations_of_audit(context, audit_uuid)
        followed, waiting = [], []
        for action in actions:
            if action.state in states.ACTION_FINAL_STATES:
                continue
            if action.dest_host in unpowered:
                db_audits.audit_action_set_state(
                    context, action.id, states.SKIPPED,
                    note=live_migration.reason_line(
                        action, 'skipped: destination %s was not powered '
                        'on' % action.dest_host))
                continue
            migration = (migrations.get(action.id)
                         or db_migrations.migration_queue(context, action.id))
            (followed if migration.status == states.RUNNING
             else waiting).append((action, migration))

        limit = self._opts.max_migrations_per_host
        slots = self._slots
        futures = []
        active = 0

        def migrate(action, migration, follow, hosts):
            nonlocal active
            try:
                live_migration.MigrationRun(self, context, action,
                                            migration).run(follow)
            finally:
                with slots.changed:
                    active -= 1
                    slots.release(hosts)

        def start(action, migration, follow):
            nonlocal active
            hosts = (action.source_host, action.dest_host)
            slots.take(hosts)
            active += 1
            futures.append(pool.submit(migrate, action, migration, follow,
                                       hosts))

        pool = concurrent.futures.ThreadPoolExecutor(
            max_workers=max(1, len(followed) + len(waiting)),
            thread_name_prefix='memagg-migration')
        with pool, slots.changed:
            # Already running in Nova: followed whatever the limit.
            for action, migration in followed:
                start(action, migration, follow=True)
            while waiting or active:
                for item in list(waiting):
                    action = item[0]
                    if slots.fits((action.source_host, action.dest_host),
                                  limit):
                        waiting.remove(item)
                        start(*item, follow=False)
                if waiting or active:
                    slots.changed.wait()
        for future in futures:
            # A migration's unexpected error (the DB failing, ...) stops
            # the execution here, once the others have ended.
            future.result()


def _of_type(actions, action_type):
    return [a for a in actions if a.action_type == action_type]
