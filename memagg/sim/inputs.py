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

"""memagg-sim's input: the trace (a CSV file, or the synthetic generator's)
and its hosts, from the command line's input arguments."""
import dataclasses
import os

from memagg.common import cli
from memagg.sim import arguments
from memagg.sim import synthetic
from memagg.sim import trace as sim_trace


def _synthetic_params(args):
    values = {name: getattr(args, name) for name, _, _ in arguments.SYNTHETIC
              if getattr(args, name) is not None}
    for name, option in (('hosts', args.hosts),
                         ('host_cpus', args.host_cpus),
                         ('host_memory_mb', args.host_memory_mb)):
        if option is not None:
            values[name] = option
    params = synthetic.Params(**values)
    try:
        trace, hosts = synthetic.generate(params)
    except ValueError as error:
        name, _, reason = str(error).partition(': ')
        raise cli.UsageError('argument --%s: %s'
                             % (name.replace('_', '-'), reason))
    info = {'source': 'synthetic', 'synthetic': dataclasses.asdict(params)}
    info['synthetic']['vms'] = params.vm_count
    return trace, hosts, trace.initial_host, info


def _trace_input(args):
    for name, _, _ in arguments.SYNTHETIC:
        if getattr(args, name) is not None:
            raise cli.UsageError('argument --%s: only for the synthetic '
                                 'trace; leave it out with --trace'
                                 % name.replace('_', '-'))
    trace = sim_trace.read_trace(args.trace)
    if args.hosts_file:
        for option, value in (('--host-cpus', args.host_cpus),
                              ('--host-memory-mb', args.host_memory_mb)):
            if value is not None:
                raise cli.UsageError(
                    'argument %s: not with --hosts-file (the file gives '
                    'each host\'s)' % option)
        hosts = sim_trace.read_hosts(args.hosts_file)
    else:
        if args.hosts is None and not trace.host_names:
            raise cli.UsageError(
                'argument --hosts: the trace names no hosts; give --hosts '
                'N or --hosts-file FILE')
        try:
            hosts = sim_trace.make_hosts(
                args.hosts,
                args.host_cpus or arguments.DEFAULT_HOSTS_CPUS,
                args.host_memory_mb or arguments.DEFAULT_HOST_MEMORY_MB,
                trace.host_names)
        except ValueError as error:
            raise cli.UsageError('argument --hosts: %s' % error)
    initial = sim_trace.initial_hosts(trace, hosts, args.hosts_file)
    return trace, hosts, initial, {'source': os.path.abspath(args.trace)}


#: The attributes of parsed arguments that inputs() reads.
INPUT_OPTIONS = (('trace', 'hosts_file', 'hosts', 'host_cpus',
                  'host_memory_mb')
                 + tuple(name for name, _, _ in arguments.SYNTHETIC))


def inputs(args):
    """The trace, its hosts, each VM's initial host index (-1: to place)
    and a description of the trace for the summary, from the INPUT_OPTIONS
    of ``args``; raises cli.UsageError or TraceError for bad input."""
    if args.trace:
        return _trace_input(args)
    if args.hosts_file:
        raise cli.UsageError('argument --hosts-file: only with --trace (the '
                             'synthetic trace uses --hosts identical hosts)')
    return _synthetic_params(args)


def describe(trace, hosts, info):
    """The trace's description for a summary: ``info`` (from inputs())
    with its length and size."""
    step = trace.step_s
    return dict(info, steps=trace.steps, step_s=step,
                duration_s=trace.steps * step, vms=trace.vms,
                hosts=len(hosts))
