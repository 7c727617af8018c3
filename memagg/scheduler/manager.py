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

"""memagg-scheduler's manager: the RPC endpoint of the global manager.

Besides storing compute reports (memagg.scheduler.report_listener consumes
them in batches; the RPC ``report`` serves compute nodes pinned below
1.6), it runs consolidation rounds: an audit is
planned (memagg.scheduler.audits) when the API asks (run_audit), every
[consolidation] interval seconds (0: only on demand; the first one interval
after the start, once the compute nodes' reports are in: at the start,
memagg-aio's compute service has not reported yet, and reports queued while
the scheduler was down are still being read), and its plan is
executed through the compute API (memagg.scheduler.migration) when asked
(execute_audit) or at once for an audit made with auto_execute. It also runs
the global memory reservoir (memagg.scheduler.reservoir): grants of remote
memory are allocated, released and reclaimed in the RPC handlers, which
the threading executor runs side by side; the releases and reclaims the
API started (finish_release, finish_reclaim casts: the API has answered)
run on the grants worker, with the clean-up of what a stopped run left.

Several workers may share the topic (``[coordination] backend_url``,
memagg.common.coordination): each report, audit request or grant goes to
one of them; periodic rounds, the purge, the Placement job and the
recovery of what a dead worker left run on the elected leader only, and a
worker claims an audit or grant before it works on it, so no two workers
plan, execute or set up the same one.

Rounds and executions run one after another on one worker thread, never in
an RPC handler, so RPC (reports, pings) is answered while a plan executes
for minutes; a round is never planned while a plan is being carried out,
as hosts and VMs are then changing under it. The worker is a daemon
thread: stopping the service does not wait for an execution, which the
next start resumes from the DB.

With [scheduler] mode = observe (memagg.scheduler.mode) rounds are planned
and stored as ever, but no plan is executed (an execution asked for fails
the audit with the reason) and the reservoir grants nothing.
"""
import functools
import queue
import threading

from oslo_db import exception as db_exc
from oslo_log import log as logging
import oslo_messaging as messaging

from memagg.common import coordination
from memagg.common import exceptions
from memagg.common import retry
from memagg.conf import CONF
from memagg.db import audits as db_audits
from memagg.db import migrations as db_migrations
from memagg.db import reports as db_reports
from memagg.db import samples as db_samples
from memagg.drivers.compute_api import base as compute_api
from memagg.scheduler import audits
from memagg.scheduler import consolidation
from memagg.scheduler import migration
from memagg.scheduler import mode
from memagg.scheduler import placement
from memagg.scheduler import report_listener
from memagg.scheduler import reservoir as reservoir_mod
from memagg.scheduler import states
from memagg import service

LOG = logging.getLogger(__name__)

BINARY = 'memagg-scheduler'


class _Worker:
    """Runs submitted jobs in order on one daemon thread.

    With ``db_retry``, a job that fails because the database is out is run
    again once it may be back, as oslo.db's [database] db_max_retries,
    db_retry_interval, db_inc_retry_interval and db_max_retry_interval say,
    so an outage does not leave its work half done until the next start;
    its jobs must be safe to run again (they carry on from the state they
    find).
    """

    def __init__(self, name, db_retry=False):
        self._jobs = queue.Queue()
        self._stopping = threading.Event()
        self._db_retry = db_retry
        self._thread = threading.Thread(target=self._run, name=name,
                                        daemon=True)

    def start(self):
        self._thread.start()

    def submit(self, what, func, *args):
        """Queue ``func(*args)``; ``what`` names it in the log."""
        self._jobs.put((what, func, args))

    def stop(self):
        """End the thread after the job it runs now (not waited for); a job
        waiting for the database gives up."""
        self._stopping.set()
        self._jobs.put(None)

    def _run(self):
        while True:
            job = self._jobs.get()
            if job is None:
                return
            self._call(*job)

    def _call(self, what, func, args):
        db = CONF.database
        # [database] db_max_retries: -1 tries for as long as it takes.
        attempts = (None if db.db_max_retries < 0
                    else db.db_max_retries + 1) if self._db_retry else 1
        policy = retry.Policy(
            attempts, db.db_retry_interval,
            doubling=db.db_inc_retry_interval,
            max_interval=db.db_max_retry_interval)
        try:
            retry.call(func, *args, what=what, policy=policy,
                       retry_on=db_exc.DBConnectionError,
                       stop=self._stopping)
        except retry.Stopped:
            return
        except db_exc.DBConnectionError as exc:
            LOG.error('%s failed: the database is unreachable (%s); given '
                      'up', what, exc)
        except Exception:
            # One failed job must not end the worker.
            LOG.exception('%s failed', what)


class SchedulerManager(service.Manager):
    """Stores compute reports, purges old samples, plans and executes
    consolidation audits, grants remote memory.

    Invalid [consolidation], [reservoir] or [compute] compute_api_driver
    options, and with [placement] enabled invalid [placement] options,
    raise InvalidParameter here, at start, naming the option. With
    [placement] enabled it runs the Placement job
    (memagg.scheduler.placement) every [placement] interval seconds.
    """

    target = messaging.Target(version='1.7')

    def __init__(self, host=None, executor=None, reservoir=None,
                 placement_job=None, coordinator=None):
        super().__init__(host)
        consolidation.load_algorithms(CONF.consolidation)
        self.coordinator = coordinator or coordination.Coordinator(
            CONF, CONF.scheduler.topic)
        self.executor = executor or migration.Executor(
            CONF, compute_api.load(CONF))
        self.executor.claim = self.coordinator.claim
        self.reservoir = reservoir or reservoir_mod.Reservoir(CONF)
        self.reservoir.claim = self.coordinator.claim
        self.executor.promote = self.reservoir.promote_for_migration
        self.placement_job = placement_job or placement.load(CONF)
        # Grant clean-up has a thread of its own: it must not wait behind
        # a plan's execution.
        self._grants_worker = _Worker('%s-grants' % BINARY, db_retry=True)
        self._worker = _Worker('%s-rounds' % BINARY)
        # Whether a periodic round is queued and not yet planned: rounds
        # do not pile up behind a long execution.
        self._periodic_queued = threading.Event()
        self._recovery_queued = threading.Event()
        self._periodic = audits.PeriodicRounds(claim=self.coordinator.claim)
        self._reports = None

    def init_host(self):
        """Start the worker and let it finish what a previous run left:
        executions are resumed, audits left planning are marked failed by
        the executor, and audits still pending are planned. With several
        workers, what another live worker claims is left to it."""
        if mode.observing(CONF):
            LOG.info('[scheduler] mode = observe: audits are planned and '
                     'stored, never executed; no grant is made')
        self.coordinator.start()
        self._worker.start()
        self._worker.submit('Resuming audits', self._recover)
        # Read before RPC is served: a grant pending now was left half set
        # up by a previous run (or, with several workers, is claimed by the
        # live one setting it up), not started by this one.
        pending = self.reservoir.pending_grants(self.admin_context)
        self._grants_worker.start()
        self._grants_worker.submit('Cleaning up grants left pending',
                                   self.reservoir.recover,
                                   self.admin_context, pending)
        self._reports = report_listener.ReportListener(CONF,
                                                       self.admin_context)
        self._reports.start()

    def cleanup_host(self):
        if self._reports is not None:
            self._reports.stop()
        self._worker.stop()
        self._grants_worker.stop()
        self.coordinator.stop()

    def _recover(self):
        self._recovery_queued.clear()
        self.executor.resume(self.admin_context,
                             execute=not mode.observing(CONF))
        for audit in db_audits.audits_in_state(self.admin_context,
                                               (audits.PENDING,)):
            LOG.info('Planning audit %s, pending since before this start',
                     audit.uuid)
            self._plan(audit.uuid)

    @messaging.expose
    def report(self, ctxt, report):
        """Store one ComputeReport (hosts, instances, wss_samples,
        host_samples) cast by a memagg-compute pinned below 1.6; newer ones
        send notifications (memagg.scheduler.report_listener)."""
        self.report_batch(ctxt, [report])

    @messaging.expose
    def report_batch(self, ctxt, reports):
        """Store several ComputeReports in one transaction."""
        batch = []
        for report in reports:
            host, instances, samples = report.to_db_values()
            batch.append(dict(host=host, instances=instances, samples=samples,
                              reported_at=report.reported_at,
                              host_sample=report.host_sample()))
        try:
            db_reports.report_ingest_batch(ctxt, batch)
        except db_exc.DBConnectionError as exc:
            # The next report carries the state again; the WSS history
            # keeps a gap for the outage, as it should.
            for report in reports:
                LOG.error('The report of %s taken at %s is not stored, the '
                          'database is unavailable: %s', report.host,
                          report.reported_at, exc)
            return
        for report in reports:
            LOG.debug('Stored the report of %s', report.host)

    @messaging.expose
    def ping(self, ctxt):
        """Prove this service answers RPC: its host and binary."""
        return {'host': self.host, 'binary': BINARY}

    @messaging.expose
    def run_audit(self, ctxt, audit_uuid):
        """Plan pending audit ``audit_uuid`` (and execute its plan when it
        was made with auto_execute), on the worker."""
        self._worker.submit('Planning audit %s' % audit_uuid, self._plan,
                            audit_uuid)

    @messaging.expose
    def execute_audit(self, ctxt, audit_uuid):
        """Execute recommended audit ``audit_uuid``'s plan, on the
        worker."""
        self._worker.submit('Executing audit %s' % audit_uuid,
                            self._execute, audit_uuid)

    @messaging.expose
    @messaging.expected_exceptions(exceptions.MemaggException)
    def allocate_remote(self, ctxt, instance_uuid, consumer_host, size_mb):
        """Grant remote memory to an instance; the grant dict (with its
        secret). Raises RemoteMemoryUnavailable when nothing can be
        granted."""
        return self.reservoir.allocate(ctxt, instance_uuid, consumer_host,
                                       size_mb)

    @messaging.expose
    @messaging.expected_exceptions(exceptions.MemaggException)
    def release_grant(self, ctxt, grant_uuid, consumer_host=None):
        """Release a grant (idempotent); the grant dict. A consumer_host
        that no longer consumes it releases nothing."""
        return self.reservoir.release(ctxt, grant_uuid,
                                      consumer_host=consumer_host)

    @messaging.expose
    @messaging.expected_exceptions(exceptions.MemaggException)
    def reclaim(self, ctxt, donor_host, size_mb):
        """Take memory a donor lends back; the MiB reclaimed."""
        return self.reservoir.reclaim(ctxt, donor_host, size_mb)

    @messaging.expose
    def finish_allocation(self, ctxt, grant_uuid):
        """Set up grant ``grant_uuid``, which the API reserved, on the
        grants worker (a cast: the API has answered)."""
        self._grants_worker.submit(
            'Setting up grant %s' % grant_uuid,
            self.reservoir.finish_allocation, self.admin_context, grant_uuid)

    @messaging.expose
    def finish_release(self, ctxt, grant_uuid):
        """Carry out the release of grant ``grant_uuid``, which the API
        made releasing, on the grants worker (a cast: the API has
        answered)."""
        self._grants_worker.submit(
            'Releasing grant %s' % grant_uuid, self.reservoir.finish_release,
            self.admin_context, grant_uuid)

    @messaging.expose
    def finish_reclaim(self, ctxt, donor_host, slabs):
        """Carry out the reclaim of ``slabs`` (grant uuid -> indexes) lent
        by ``donor_host``, which the API made reclaiming, on the grants
        worker (a cast)."""
        self._grants_worker.submit(
            'Reclaiming slabs of %s' % donor_host,
            self.reservoir.finish_reclaim, self.admin_context, donor_host,
            slabs)

    @messaging.expose
    def move_slabs(self, ctxt, grant_uuid, consumer_host, demote, promote):
        """Move slabs of grant ``grant_uuid`` between the tiers, as its
        consumer's tier policy asked, on the grants worker (a cast)."""
        self._grants_worker.submit(
            'Moving slabs of grant %s' % grant_uuid,
            self.reservoir.move_slabs, self.admin_context, grant_uuid,
            consumer_host, demote, promote)

    def _plan(self, audit_uuid):
        with self.coordinator.claim('audit-%s' % audit_uuid) as claimed:
            if not claimed:
                LOG.info('Not planning audit %s: another worker claims it',
                         audit_uuid)
                return
            audit = audits.run_audit(self.admin_context, audit_uuid)
        self._auto_execute(audit)

    def _auto_execute(self, audit):
        # ``audit`` is None when a round stored none.
        if (audit is None or not audit.auto_execute
                or audit.state != audits.RECOMMENDED):
            return
        if mode.observing(CONF):
            LOG.info('Audit %s stays recommended: [scheduler] mode = '
                     'observe executes no plan, auto_execute included',
                     audit.uuid)
            return
        self._execute(audit.uuid)

    def _refuse(self, audit_uuid):
        """Fail audit ``audit_uuid`` (and the migrations it queued) with
        observe mode's reason; nothing of it runs."""
        reason = mode.refusal('audit %s is not executed' % audit_uuid)
        LOG.warning('%s', reason)
        ctxt = self.admin_context
        for row in db_migrations.migrations_of_audit(ctxt,
                                                     audit_uuid).values():
            if row.status == states.QUEUED:
                db_migrations.migration_finish(ctxt, row.id, states.FAILED,
                                               error=reason)
        try:
            db_audits.audit_set_state(
                ctxt, audit_uuid, states.FAILED, reason=reason,
                expected=(states.RECOMMENDED, states.EXECUTING))
        except (exceptions.Conflict, exceptions.NotFound) as exc:
            LOG.warning('Audit %s left as it is: %s', audit_uuid, exc)

    def _execute(self, audit_uuid):
        with self.coordinator.claim('audit-%s' % audit_uuid) as claimed:
            if not claimed:
                LOG.warning('Not executing audit %s: another worker claims '
                            'it', audit_uuid)
                return
            if mode.observing(CONF):
                self._refuse(audit_uuid)
                return
            try:
                self.executor.execute(self.admin_context, audit_uuid)
            except (exceptions.Conflict, exceptions.NotFound) as exc:
                # Asked twice, or for an audit that is gone: nothing to do.
                LOG.warning('Not executing audit %s: %s', audit_uuid, exc)

    def periodic_round(self):
        """Queue a round with the [consolidation] options, unless the
        previous periodic one still waits; what it stores is said in
        memagg.scheduler.audits."""
        if self._periodic_queued.is_set():
            LOG.info('Skipping a periodic consolidation round: the '
                     'previous one still waits for the worker')
            return
        self._periodic_queued.set()
        self._worker.submit('Planning a periodic round',
                            self._periodic_plan)

    def _periodic_plan(self):
        self._periodic_queued.clear()
        self._auto_execute(self._periodic.run(self.admin_context))

    def purge_wss_samples(self):
        """Delete the WSS and host samples older than [wss]
        sample_retention_hours."""
        count = db_samples.purge_wss_samples(self.admin_context)
        if count:
            LOG.info('Purged %d samples older than %d hours', count,
                     CONF.wss.sample_retention_hours)

    def recover_orphans(self):
        """Queue the recovery of what a dead worker left (audits on the
        rounds worker, grants on the grants worker), unless the previous
        one still waits."""
        if self._recovery_queued.is_set():
            return
        self._recovery_queued.set()
        self._worker.submit('Resuming audits left by a stopped worker',
                            self._recover)
        self._grants_worker.submit(
            'Cleaning up grants left by a stopped worker',
            self.reservoir.recover, self.admin_context,
            self.reservoir.pending_grants(self.admin_context))

    def _as_leader(self, name, func):
        # Every worker keeps the task's timer; only the leader runs it, so
        # a new leader takes the jobs over at their next period.
        def run():
            if self.coordinator.is_leader():
                LOG.debug('Periodic job %s: running it as the leader', name)
                func()
        return run

    def periodic_tasks(self):
        """The jobs that run once in the cluster, run by the leader (every
        worker when there is no [coordination] backend)."""
        jobs = [service.PeriodicTask('purge-wss-samples',
                                     CONF.scheduler.purge_interval,
                                     self.purge_wss_samples)]
        if CONF.consolidation.interval > 0:
            jobs.append(service.PeriodicTask(
                'consolidation-round', CONF.consolidation.interval,
                self.periodic_round,
                first_after=CONF.consolidation.interval))
        if self.placement_job is not None:
            jobs.append(service.PeriodicTask(
                'placement-inventory', self.placement_job.interval,
                functools.partial(self.placement_job.run,
                                  self.admin_context)))
        if self.coordinator.enabled:
            jobs.append(service.PeriodicTask(
                'recover-orphans', CONF.coordination.recover_interval,
                self.recover_orphans,
                first_after=CONF.coordination.recover_interval))
        for job in jobs:
            job.func = self._as_leader(job.name, job.func)
        return jobs
