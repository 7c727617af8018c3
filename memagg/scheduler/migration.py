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
import dataclasses
import threading
import time

from oslo_log import log as logging
from oslo_utils import timeutils

from memagg.common import coordination
from memagg.common import exceptions
from memagg.db import audits as db_audits
from memagg.db import hosts as db_hosts
from memagg.db import migrations as db_migrations
from memagg.drivers.compute_api import base as compute_api
from memagg.scheduler import consolidation
from memagg.scheduler import grant_moves

LOG = logging.getLogger(__name__)

# audits.state
PLANNING = 'planning'
RECOMMENDED = 'recommended'
EXECUTING = 'executing'
# audits.state, audit_actions.state and migrations.status
SUCCEEDED = 'succeeded'
FAILED = 'failed'
# audits.state: some actions succeeded, others did not
PARTIAL = 'partial'
# audit_actions.state
PENDING = 'pending'
RUNNING = 'running'
SKIPPED = 'skipped'
# migrations.status (with running, succeeded, failed)
QUEUED = 'queued'
# hosts.state
ACTIVE = 'active'
STANDBY = 'standby'

ACTION_FINAL_STATES = (SUCCEEDED, FAILED, SKIPPED)

#: The reason Nova shows for the disabled compute service of a host that a
#: plan put on standby.
STANDBY_REASON = 'memagg: consolidated'
#: audits.reason of an audit found planning when the scheduler starts.
RESTARTED_WHILE_PLANNING = 'memagg-scheduler restarted while planning'

# Nova's server statuses.
_MIGRATING_STATUS = 'MIGRATING'
_ACTIVE_STATUS = 'ACTIVE'
_ERROR_STATUS = 'ERROR'


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


@dataclasses.dataclass
class _Outcome:
    """How an attempt (or the look at one after a restart) ended."""

    status: str             # SUCCEEDED, FAILED, or RUNNING: try again
    error: str = None
    known_duration: bool = True


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

    def grant_move(self, context, migration):
        """The GrantMove of ``migration``'s VM."""
        return grant_moves.GrantMove(context, migration, self.conf,
                                     compute=self.compute_rpc)

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
        db_audits.audit_set_state(context, audit_uuid, EXECUTING,
                                  expected=(RECOMMENDED, EXECUTING))
        LOG.info('Executing audit %s', audit_uuid)
        self._run(context, audit_uuid)

    def resume(self, context):
        """Finish what a stopped scheduler left: audits found planning
        fail (their round is lost; a new one can be asked for), audits
        found executing are run to their end from the state in the DB.
        Audits and copies another live worker has claimed are left to
        it."""
        for audit in db_audits.audits_in_state(context, (PLANNING,)):
            with self.claim('audit-%s' % audit.uuid) as claimed:
                if not claimed:
                    continue
                LOG.warning('Audit %s was planning when its '
                            'memagg-scheduler stopped; marking it failed',
                            audit.uuid)
                try:
                    db_audits.audit_set_state(
                        context, audit.uuid, FAILED,
                        reason=RESTARTED_WHILE_PLANNING,
                        expected=(PLANNING,))
                except exceptions.Conflict:
                    # Its round was stored before the claim was taken.
                    continue
        for migration in db_migrations.migrations_copying(context):
            self.follow_copy(context, migration,
                             migration.local_copy_left_mb)
        for audit in db_audits.audits_in_state(context, (EXECUTING,)):
            with self.claim('audit-%s' % audit.uuid) as claimed:
                if claimed:
                    self._resume(context, audit.uuid)

    def _resume(self, context, audit_uuid):
        # Read again under the claim: the worker that held it may have
        # finished the audit in between.
        if db_audits.audit_get(context, audit_uuid).state != EXECUTING:
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
        for action in _of_type(actions, consolidation.POWER_ON):
            self._power(context, action, enable=True)

        actions = db_audits.audit_get(context, audit_uuid).actions
        unpowered = {a.source_host for a in _of_type(
            actions, consolidation.POWER_ON) if a.state != SUCCEEDED}
        self._migrate_all(context, audit_uuid, _of_type(
            actions, consolidation.MIGRATE), unpowered)

        actions = db_audits.audit_get(context, audit_uuid).actions
        for action in _of_type(actions, consolidation.POWER_OFF):
            left = [a for a in _of_type(actions, consolidation.MIGRATE)
                    if a.source_host == action.source_host
                    and a.state != SUCCEEDED]
            if left and action.state not in ACTION_FINAL_STATES:
                db_audits.audit_action_set_state(
                    context, action.id, SKIPPED, note=_note(
                        action, 'skipped: %d VM(s) did not leave the host '
                        '(%s)' % (len(left), ', '.join(
                            a.instance_uuid for a in left))))
                continue
            self._power(context, action, enable=False)
        self._finish(context, audit_uuid)

    def _finish(self, context, audit_uuid):
        audit = db_audits.audit_get(context, audit_uuid)
        states = collections.Counter(a.state for a in audit.actions)
        if states[SUCCEEDED] == len(audit.actions):
            db_audits.audit_set_state(context, audit_uuid, SUCCEEDED,
                                      expected=(EXECUTING,))
            LOG.info('Audit %s executed: %d actions succeeded', audit_uuid,
                     len(audit.actions))
            return
        summary = ('execution: %d of %d actions failed, %d skipped'
                   % (states[FAILED], len(audit.actions), states[SKIPPED]))
        state = PARTIAL if states[SUCCEEDED] else FAILED
        db_audits.audit_set_state(
            context, audit_uuid, state, expected=(EXECUTING,),
            reason='\n'.join(filter(None, [summary, audit.reason])))
        LOG.warning('Audit %s %s: %s', audit_uuid,
                    'partly executed' if state == PARTIAL else 'failed',
                    summary)

    # Power actions.

    def _power(self, context, action, enable):
        """Enable (power_on) or disable (power_off) the action's host's
        compute service, then record the host's state."""
        if action.state in ACTION_FINAL_STATES:
            return
        db_audits.audit_action_set_state(context, action.id, RUNNING)
        host = action.source_host
        error = self._call_with_retries(
            lambda: self.compute_api.set_host_enabled(
                host, enable, reason=None if enable else STANDBY_REASON))
        if error is not None:
            db_audits.audit_action_set_state(
                context, action.id, FAILED,
                note=_note(action, 'failed: %s' % error))
            return
        try:
            db_hosts.host_set_state(context, host,
                                    ACTIVE if enable else STANDBY)
        except exceptions.NotFound:
            LOG.warning('Host %s has no row in memagg\'s DB; its compute '
                        'service was %s in Nova all the same', host,
                        'enabled' if enable else 'disabled')
        db_audits.audit_action_set_state(context, action.id, SUCCEEDED)

    def _call_with_retries(self, call):
        """Run ``call``, again after poll_interval while the compute
        service is unavailable, up to max_retries times; None on success,
        else why it failed."""
        for attempt in range(self._opts.max_retries + 1):
            if attempt:
                time.sleep(self._opts.poll_interval)
            try:
                call()
                return None
            except compute_api.ComputeApiNotConfigured as exc:
                return str(exc)
            except compute_api.ComputeApiUnavailable as exc:
                error = '%s (after %d attempts)' % (exc, attempt + 1)
            except compute_api.ComputeApiError as exc:
                return str(exc)
        return error

    # Migrations.

    def _migrate_all(self, context, audit_uuid, actions, unpowered):
        """Run the migrate ``actions`` not yet ended, those an attempt was
        left running first, then in plan order as their hosts have room."""
        migrations = db_migrations.migrations_of_audit(context, audit_uuid)
        followed, waiting = [], []
        for action in actions:
            if action.state in ACTION_FINAL_STATES:
                continue
            if action.dest_host in unpowered:
                db_audits.audit_action_set_state(
                    context, action.id, SKIPPED, note=_note(
                        action, 'skipped: destination %s was not powered '
                        'on' % action.dest_host))
                continue
            migration = (migrations.get(action.id)
                         or db_migrations.migration_queue(context, action.id))
            (followed if migration.status == RUNNING else waiting).append(
                (action, migration))

        limit = self._opts.max_migrations_per_host
        slots = self._slots
        futures = []
        active = 0

        def migrate(action, migration, follow, hosts):
            nonlocal active
            try:
                _MigrationRun(self, context, action, migration).run(follow)
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


class _MigrationRun:
    """One migrate action, from its first (or resumed) attempt to its
    end."""

    def __init__(self, executor, context, action, migration):
        self.executor = executor
        self.api = executor.compute_api
        self.opts = executor._opts
        self.context = context
        self.action = action
        self.migration = migration
        self.vm = action.instance_uuid
        self.started = None
        self.bytes = None
        # Whether Nova was seen migrating the VM during this attempt.
        self.followed = False

    def run(self, follow):
        if follow:
            outcome = self._resumed()
        else:
            outcome = _Outcome(RUNNING)
        while outcome.status == RUNNING:
            if outcome.error is not None:
                db_migrations.migration_attempt_failed(
                    self.context, self.migration.id, outcome.error,
                    self.bytes)
            if self.migration.attempts > self.opts.max_retries:
                outcome = _Outcome(
                    FAILED, '%s (after %d attempts)' % (
                        outcome.error, self.migration.attempts),
                    known_duration=outcome.known_duration)
                break
            if self.migration.attempts:
                time.sleep(self.opts.poll_interval)
            outcome = self._attempt()
        self._end(outcome)

    def _resumed(self):
        """The outcome of the attempt the DB says was running when the
        scheduler stopped: follow it if Nova still migrates the VM."""
        # The row was last written when the attempt started, or failed.
        written = self.migration.updated_at or self.migration.created_at
        elapsed = (timeutils.utcnow() - written).total_seconds()
        self.started = time.monotonic() - max(0.0, elapsed)
        LOG.info('Following the live migration of %s to %s, attempt %d, '
                 'left running %.0f s ago', self.vm, self.action.dest_host,
                 self.migration.attempts, elapsed)
        outcome = self._follow(if_idle='found on %s, not migrating, after '
                               'memagg-scheduler restarted'
                               % self.action.source_host)
        if not self.followed:
            # It ended while no scheduler looked: when is unknown.
            outcome.known_duration = False
        return outcome

    def _attempt(self):
        """Ask Nova for the migration once, and follow it to its end."""
        self.migration = db_migrations.migration_start_attempt(
            self.context, self.migration.id)
        self.started = time.monotonic()
        LOG.info('Live-migrating %s from %s to %s, attempt %d', self.vm,
                 self.action.source_host, self.action.dest_host,
                 self.migration.attempts)
        try:
            self.api.check_can_migrate(self.vm)
        except compute_api.ComputeApiNotConfigured as exc:
            return _Outcome(FAILED, str(exc))
        error = self.executor.grant_move(self.context,
                                         self.migration).prepare()
        if error is not None:
            return _Outcome(FAILED, error)
        try:
            self.api.live_migrate(self.vm, self.action.dest_host)
        except compute_api.ComputeApiNotConfigured as exc:
            return _Outcome(FAILED, str(exc))
        except compute_api.ComputeApiUnavailable as exc:
            # Nova may have accepted it all the same: look before asking
            # again, so a migration is never started twice.
            return self._follow(if_idle=str(exc))
        except compute_api.ComputeApiError as exc:
            return _Outcome(FAILED, str(exc))
        return self._follow()

    def _follow(self, if_idle=None):
        """Look at the VM every poll_interval until Nova's task ends or
        the attempt times out. ``if_idle`` is the error of an attempt whose
        VM is found on its source before Nova was seen migrating it."""
        deadline = self.started + self.opts.migration_timeout
        self.followed = False
        last = None
        while True:
            try:
                state = self.api.get_server_state(self.vm)
            except compute_api.InstanceNotFound:
                return _Outcome(FAILED, 'Nova no longer has server %s'
                                % self.vm)
            except compute_api.ComputeApiNotConfigured as exc:
                return _Outcome(FAILED, str(exc))
            except compute_api.ComputeApiUnavailable as exc:
                state, last = None, 'Nova did not answer: %s' % exc
            if state is not None:
                last = 'Nova shows %s with status %s, task state %s' % (
                    state.host, state.status, state.task_state)
                if not _migrating(state):
                    return self._ended(state, if_idle)
                self.followed = True
                self._progress()
                problem = self._destination_problem()
                if problem is not None:
                    return self._abort(problem)
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return self._abort('not ended within %d s ([consolidation] '
                                   'migration_timeout); %s'
                                   % (self.opts.migration_timeout, last))
            time.sleep(min(self.opts.poll_interval, remaining))

    def _destination_problem(self):
        """Why the destination cannot take the VM's grants, checked while
        Nova migrates it (memagg.scheduler.grant_moves), or None."""
        if not self.api.executes_plans:
            return None
        return self.executor.grant_move(
            self.context, self.migration).destination_problem(
            max(1, int(self.opts.poll_interval)))

    def _abort(self, why):
        """Abort the attempt that timed out through the compute service,
        then look at the VM until the service let go of it (for another
        migration_timeout at most): the migration ends failed with
        ``why`` and what the abort did, or succeeded if it completed
        before the abort took effect."""
        LOG.warning('Aborting the live migration of %s to %s: %s', self.vm,
                    self.action.dest_host, why)
        try:
            aborted = self.api.abort_live_migration(self.vm)
        except compute_api.ComputeApiError as exc:
            return _Outcome(FAILED, '%s; the abort failed: %s' % (why, exc))
        if not aborted:
            what = 'Nova had no migration of it in progress to abort'
        else:
            what = 'aborted through Nova\'s live-migration abort API'
        deadline = time.monotonic() + self.opts.migration_timeout
        while True:
            try:
                state = self.api.get_server_state(self.vm)
            except compute_api.ComputeApiError as exc:
                return _Outcome(FAILED, '%s; %s; then Nova did not show the '
                                'server: %s' % (why, what, exc))
            if not _migrating(state):
                if (state.host == self.action.dest_host
                        and state.status == _ACTIVE_STATUS):
                    return _Outcome(SUCCEEDED)
                return _Outcome(FAILED, '%s; %s; the server is on %s with '
                                'status %s' % (why, what, state.host,
                                               state.status))
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return _Outcome(FAILED, '%s; %s, but Nova still migrates '
                                'it %d s later' % (
                                    why, what, self.opts.migration_timeout))
            time.sleep(min(self.opts.poll_interval, remaining))

    def _ended(self, state, if_idle):
        if state.host == self.action.dest_host:
            if state.status == _ACTIVE_STATUS:
                return _Outcome(SUCCEEDED)
            return _Outcome(FAILED, 'server is on %s with status %s, not '
                            'ACTIVE' % (state.host, state.status))
        if state.status == _ERROR_STATUS:
            return _Outcome(FAILED, 'Nova put the server in ERROR on %s'
                            % state.host)
        if if_idle is not None and not self.followed:
            return _Outcome(RUNNING, if_idle)
        error = 'Nova ended the live migration with the server on %s, ' \
                'status %s' % (state.host, state.status)
        return _Outcome(RUNNING, self._with_nova_reason(error))

    def _with_nova_reason(self, error):
        """``error`` with Nova's own reason for ending the migration,
        where Nova says."""
        try:
            reason = self.api.get_migration_failure(self.vm)
        except compute_api.ComputeApiError as exc:
            LOG.debug('No reason for the failed migration of %s: %s',
                      self.vm, exc)
            return error
        return '%s; %s' % (error, reason) if reason else error

    def _progress(self):
        """Remember the bytes copied so far, where Nova says."""
        try:
            progress = self.api.get_migration_progress(self.vm)
        except compute_api.ComputeApiError as exc:
            LOG.debug('No progress of %s\'s migration: %s', self.vm, exc)
            return
        if progress is not None and progress.bytes_processed is not None:
            self.bytes = progress.bytes_processed

    def _end(self, outcome):
        duration = None
        if self.started is not None and outcome.known_duration:
            duration = round(time.monotonic() - self.started, 3)
        # The grants follow the VM (or stay) before the migration is seen
        # ended: until then no host may release them.
        grants = self.executor.grant_move(self.context, self.migration)
        costs = {}
        if outcome.status == SUCCEEDED:
            costs = grants.finish()
        elif self.api.executes_plans:
            # A driver that cannot migrate prepared nothing to undo.
            grants.abandon()
        note = None
        if outcome.status == FAILED:
            note = _note(self.action, 'failed: %s' % outcome.error)
            LOG.warning('Live migration of %s to %s failed: %s', self.vm,
                        self.action.dest_host, outcome.error)
        else:
            LOG.info('Live migration of %s to %s succeeded', self.vm,
                     self.action.dest_host)
        # What libvirt counted at the end beats Nova's last progress.
        migration = db_migrations.migration_finish(
            self.context, self.migration.id, outcome.status,
            duration_s=duration, error=outcome.error,
            bytes_transferred=costs.get('bytes_transferred') or self.bytes,
            note=note)
        if costs.get('local_copy_left_mb'):
            self.executor.follow_copy(self.context, migration,
                                      costs['local_copy_left_mb'])


def _migrating(state):
    return (state.task_state is not None
            or state.status == _MIGRATING_STATUS)


def _of_type(actions, action_type):
    return [a for a in actions if a.action_type == action_type]


def _note(action, outcome):
    """One line of an audit's reason: which action, and what became of
    it."""
    if action.action_type == consolidation.MIGRATE:
        what = 'migrate %s from %s to %s' % (
            action.instance_uuid, action.source_host, action.dest_host)
    else:
        what = '%s %s' % (action.action_type, action.source_host)
    return 'action %d (%s) %s' % (action.sequence, what, outcome)
