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

"""One migrate action of an audit's plan, from its first (or resumed)
attempt to its end (ALGORITHMS.md §3.5), for memagg.scheduler.migration's
Executor: the VM's grants move first (grant_moves), then the compute
service is asked to live-migrate it and the server is looked at every
poll_interval seconds until Nova's task state clears; an attempt that ends
back on the source is tried again up to max_retries times, one still
running after migration_timeout seconds is aborted. Each attempt is
written to the DB (memagg.db.migrations) before Nova is asked.
"""
import dataclasses
import time

from oslo_log import log as logging
from oslo_utils import timeutils

from memagg.common import retry
from memagg.db import migrations as db_migrations
from memagg.drivers.compute_api import base as compute_api
from memagg.scheduler import plans
from memagg.scheduler import states

LOG = logging.getLogger(__name__)

# Nova's server statuses.
_MIGRATING_STATUS = 'MIGRATING'
_ACTIVE_STATUS = 'ACTIVE'
_ERROR_STATUS = 'ERROR'


@dataclasses.dataclass
class Outcome:
    """How an attempt (or the look at one after a restart) ended."""

    # states.SUCCEEDED, states.FAILED, or states.RUNNING: try again
    status: str
    error: str = None
    known_duration: bool = True


class _StillToMove(Exception):
    """An attempt ended with the VM still on its source: tried again."""

    def __init__(self, outcome):
        super().__init__(outcome.error)
        self.outcome = outcome


class MigrationRun:
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
            outcome = Outcome(states.RUNNING)
        if outcome.status == states.RUNNING:
            outcome = self._attempts(outcome)
        self._end(outcome)

    def _attempts(self, outcome):
        """Attempts from ``outcome`` (the VM still to move) until one ends
        it: max_retries + 1 in all, those the DB counts already included,
        poll_interval seconds apart (memagg.common.retry)."""
        try:
            self._record_failure(outcome)
            left = self.opts.max_retries + 1 - self.migration.attempts
            if left <= 0:
                raise _StillToMove(outcome)
            if self.migration.attempts:
                time.sleep(self.opts.poll_interval)
            return retry.call(
                self._attempt_to_end, what='the live migration of %s to %s'
                % (self.vm, self.action.dest_host),
                policy=retry.Policy(left, self.opts.poll_interval),
                retry_on=_StillToMove, sleep=time.sleep)
        except _StillToMove as exc:
            return Outcome(states.FAILED, '%s (after %d attempts)' % (
                exc.outcome.error, self.migration.attempts),
                known_duration=exc.outcome.known_duration)

    def _attempt_to_end(self):
        outcome = self._attempt()
        if outcome.status == states.RUNNING:
            self._record_failure(outcome)
            raise _StillToMove(outcome)
        return outcome

    def _record_failure(self, outcome):
        if outcome.error is not None:
            db_migrations.migration_attempt_failed(
                self.context, self.migration.id, outcome.error, self.bytes)

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
            return Outcome(states.FAILED, str(exc))
        error = self.executor.grant_move(self.context,
                                         self.migration).prepare()
        if error is not None:
            return Outcome(states.FAILED, error)
        try:
            self.api.live_migrate(self.vm, self.action.dest_host)
        except compute_api.ComputeApiNotConfigured as exc:
            return Outcome(states.FAILED, str(exc))
        except compute_api.ComputeApiUnavailable as exc:
            # Nova may have accepted it all the same: look before asking
            # again, so a migration is never started twice.
            return self._follow(if_idle=str(exc))
        except compute_api.ComputeApiError as exc:
            return Outcome(states.FAILED, str(exc))
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
                return Outcome(states.FAILED, 'Nova no longer has server %s'
                               % self.vm)
            except compute_api.ComputeApiNotConfigured as exc:
                return Outcome(states.FAILED, str(exc))
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
            return Outcome(states.FAILED,
                           '%s; the abort failed: %s' % (why, exc))
        if not aborted:
            what = 'Nova had no migration of it in progress to abort'
        else:
            what = 'aborted through Nova\'s live-migration abort API'
        deadline = time.monotonic() + self.opts.migration_timeout
        while True:
            try:
                state = self.api.get_server_state(self.vm)
            except compute_api.ComputeApiError as exc:
                return Outcome(states.FAILED,
                               '%s; %s; then Nova did not show the server: %s'
                               % (why, what, exc))
            if not _migrating(state):
                if (state.host == self.action.dest_host
                        and state.status == _ACTIVE_STATUS):
                    return Outcome(states.SUCCEEDED)
                return Outcome(states.FAILED,
                               '%s; %s; the server is on %s with status %s'
                               % (why, what, state.host, state.status))
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                return Outcome(states.FAILED,
                               '%s; %s, but Nova still migrates it %d s later'
                               % (why, what, self.opts.migration_timeout))
            time.sleep(min(self.opts.poll_interval, remaining))

    def _ended(self, state, if_idle):
        if state.host == self.action.dest_host:
            if state.status == _ACTIVE_STATUS:
                return Outcome(states.SUCCEEDED)
            return Outcome(states.FAILED,
                           'server is on %s with status %s, not ACTIVE'
                           % (state.host, state.status))
        if state.status == _ERROR_STATUS:
            return Outcome(states.FAILED, 'Nova put the server in ERROR on %s'
                           % state.host)
        if if_idle is not None and not self.followed:
            return Outcome(states.RUNNING, if_idle)
        error = 'Nova ended the live migration with the server on %s, ' \
                'status %s' % (state.host, state.status)
        return Outcome(states.RUNNING, self._with_nova_reason(error))

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
        if outcome.status == states.SUCCEEDED:
            costs = grants.finish()
        elif self.api.executes_plans:
            # A driver that cannot migrate prepared nothing to undo.
            grants.abandon()
        note = None
        if outcome.status == states.FAILED:
            note = reason_line(self.action, 'failed: %s' % outcome.error)
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


def reason_line(action, outcome):
    """One line of an audit's reason: which action, and what became of
    it."""
    if action.action_type == plans.MIGRATE:
        what = 'migrate %s from %s to %s' % (
            action.instance_uuid, action.source_host, action.dest_host)
    else:
        what = '%s %s' % (action.action_type, action.source_host)
    return 'action %d (%s) %s' % (action.sequence, what, outcome)
