"""Wait for memagg's asynchronous work, the tempest way: read the object
every ``client.build_interval`` seconds until it is ready or
``client.build_timeout`` ([memagg] build_timeout) has passed."""
from tempest.lib.common.utils import test_utils
from tempest.lib import exceptions as lib_exc

#: States an audit that is never executed ends in.
PLANNED = ('recommended', 'failed')


def wait_for_audit_state(client, uuid, states=PLANNED):
    """Wait until audit ``uuid`` is in one of ``states``; return it (as
    GET /v1/audits/{uuid} shows it). Raises TimeoutException naming the
    state it was left in."""
    seen = {}

    def settled():
        seen['audit'] = client.show_audit(uuid)['audit']
        return seen['audit']['state'] in states

    if not test_utils.call_until_true(settled, client.build_timeout,
                                      client.build_interval):
        raise lib_exc.TimeoutException(
            'audit %s is still %s after %s s; expected one of %s'
            % (uuid, seen['audit']['state'], client.build_timeout,
               ', '.join(states)))
    return seen['audit']
