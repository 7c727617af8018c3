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

"""What memagg's panels must show of any cloud, checked in a browser
(memagg.tests.functional.horizon): the browser suite makes these checks of
the seeded deployment, test_aio of the running ``memagg-aio --demo``, so
the demo and the suite go through one path.

The demo's numbers move while the checks read them (its guests report
every few seconds, and a page can take longer than that to load on a busy
machine), so the API is read over and over while a page loads and the page
must show one of the answers it gave meanwhile.
"""
import datetime
import threading

from memagg.dashboard import charts
from memagg.tests import polling

#: How long a check waits for a page that matches the API, and for an
#: audit to be planned.
TIMEOUT = 60

#: A host's bars: from GET /v1/host_usages, and from GET /v1/reservoir.
USAGE_SERIES = ('memory_mb', 'booked_mb', 'wss_maxavg_mb')
RESERVOIR_SERIES = ('lent_mb', 'borrowed_mb', 'free_reservoir_mb')

#: How often the API is read while a page loads: well within the demo's
#: reporting interval (3 s), without taking the CPU the page needs.
POLL_S = 0.2


def answers_around(read_api, read_page):
    """(what ``read_api()`` answered from just before ``read_page()`` to
    just after it, in order; the page). The API is read every POLL_S
    meanwhile, so every answer it held for a reporting interval is there.
    """
    answers = [read_api()]
    done = threading.Event()
    failed = []

    def poll():
        try:
            while not done.wait(POLL_S):
                answers.append(read_api())
        except Exception as error:
            failed.append(error)

    poller = threading.Thread(target=poll, daemon=True)
    poller.start()
    try:
        page = read_page()
    finally:
        done.set()
        poller.join()
    if failed:
        raise failed[0]
    answers.append(read_api())
    return answers, page


def shown(read_api, read_page, match, timeout=TIMEOUT):
    """``match(answers, page)`` of a page and the API's answers while it
    loaded, once it is not None: each answer is held for one reporting
    interval at least, but a busy machine can take that long to load a
    page, so the page is read again until what it shows was one of them.
    """
    def matched():
        return match(*answers_around(read_api, read_page))

    return polling.wait_for(matched, timeout, interval=0.5,
                            message='a page showing what the API answered '
                                    'while it loaded')


def host_bars(browser, admin_api, hosts):
    """Admin → Memory draws each of ``hosts`` with the API's numbers, and
    the memory freed (booked - Σ WSS^maxavg) as the API's; (usages by
    host, reservoir hosts by host) as the page showed them."""
    def api():
        # The numbers drawn only: a report's time changes at every report.
        usages = {u['host']: {k: u[k] for k in USAGE_SERIES}
                  for u in admin_api.host_usages.list()['host_usages']}
        pool = {h['host']: {k: h[k] for k in RESERVOIR_SERIES}
                for h in admin_api.reservoir.get()['hosts']}
        return usages, pool

    def page():
        browser.open('/admin/memory/')
        drawn = {}
        for host in hosts:
            chart = '.memagg-host[data-host="%s"] ' % host
            drawn[host] = {series: int(browser.attr(
                chart + 'g[data-series="%s"]' % series, 'data-mb'))
                for series in USAGE_SERIES + RESERVOIR_SERIES}
        return drawn, int(browser.attr('#memagg-freed', 'data-mb'))

    def match(answers, shown_page):
        # The page reads the usages and the reservoir in two requests.
        drawn, freed = shown_page
        usages = next((u for u, _ in reversed(answers) if all(
            drawn[h][k] == u[h][k] for h in hosts for k in USAGE_SERIES)
            and freed == sum(v['booked_mb'] - v['wss_maxavg_mb']
                             for v in u.values())), None)
        pool = next((p for _, p in reversed(answers) if all(
            drawn[h][k] == p[h][k] for h in hosts for k in RESERVOIR_SERIES)),
            None)
        return (usages, pool) if usages and pool else None

    usages, pool = shown(api, page, match)
    assert browser.find('.memagg-bars').size['width'] >= 200
    return usages, pool


def cloud_over_time(browser, admin_api, time_range):
    """The cloud page over ``time_range`` ('1h', '7d', ...) ends its freed
    memory on the API's latest point, with a time axis and the range
    marked as chosen."""
    def page():
        browser.open('/admin/memory/cloud/?range=%s' % time_range)
        return [int(dot.get_attribute('data-mb')) for dot in
                browser.find_all(
                    '#memagg-cloud-memory g[data-series="freed_mb"] circle')]

    def api():
        # The latest point over the page's range; the answer's since and
        # until move with the clock, so only that point is compared.
        until = datetime.datetime.now(
            datetime.timezone.utc).replace(microsecond=0)
        return admin_api.cloud_usage.get(
            since=until - charts.RANGES[time_range],
            until=until)['history'][-1]['freed_mb']

    shown(api, page, lambda answers, freed: freed and freed[-1] in answers)
    assert browser.find_all('#memagg-cloud-memory .memagg-x-tick')
    assert browser.find('.memagg-range a.active').text == time_range


def audit_from_the_panel(browser, admin_api):
    """An audit created with the panel's button is planned, listed, and
    shown with its actions in order and their instances by name; the
    audit as the API shows it."""
    browser.open('/admin/memory/audits/')
    browser.find('#memagg-create-audit').click()
    polling.wait_for(lambda: browser.find_all('#memagg-audit-state'),
                     TIMEOUT, message='the new audit\'s page')
    uuid = browser.driver.current_url.rstrip('/').rsplit('/', 1)[-1]
    audit = polling.wait_for(
        lambda: (lambda a: a if a['state'] not in ('pending', 'planning')
                 else None)(admin_api.audits.get(uuid)),
        TIMEOUT, interval=0.2, message='the audit planned')
    assert audit['auto_execute'] is False
    browser.open('/admin/memory/audits/')
    assert browser.find_all('.memagg-audits tr[data-uuid="%s"]' % uuid)
    browser.open('/admin/memory/audits/%s/' % uuid)
    assert browser.find('#memagg-audit-state').text == audit['state']
    shown = [int(row.get_attribute('data-sequence'))
             for row in browser.find_all('.memagg-actions tr[data-sequence]')]
    assert shown == sorted(a['sequence'] for a in audit['actions'])
    names = {i['uuid']: i['name']
             for i in admin_api.instances.list(limit=1000).all_items()}
    migrated = [a for a in audit['actions'] if a['instance_uuid']]
    cells = [c.text for c in browser.find_all('.memagg-action-instance a')]
    assert cells == [names[a['instance_uuid']] for a in
                     sorted(migrated, key=lambda a: a['sequence'])]
    # The admin may execute; the button is there only while the plan
    # waits for it.
    assert (len(browser.find_all('#memagg-execute')) ==
            (audit['state'] == 'recommended'))
    return audit
