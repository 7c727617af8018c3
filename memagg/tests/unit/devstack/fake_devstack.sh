# shellcheck shell=bash
# shellcheck disable=SC2034  # DevStack's variables, read by the plug-in
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

# A recording stand-in for the part of DevStack's function library (and of
# the variables stack.sh sets) that memagg's plug-in uses, for
# test_plugin.py; see its docstring for why the real DevStack cannot run
# there. Source it, then devstack/settings, then call run_plugin.
#
# Every call of a DevStack function that acts on the system appends one
# line to $STANDIN_LOG: its name and arguments, each quoted by printf %q,
# so that Python's shlex.split gives them back. The ini functions edit the
# files for real (inifile.py), as do sudo and the commands the plug-in runs
# by path; nothing else touches the system: no package, account, database
# server or service is involved.
#
# The test sets STANDIN_ROOT (a scratch directory standing for /), STANDIN_LOG,
# STANDIN_PYTHON (the interpreter for inifile.py), ENABLED_SERVICES and
# DISABLED_SERVICES (comma-separated), MEMAGG_DIR and MEMAGG_CONF_DIR.

_STANDIN_INIFILE=$(dirname "${BASH_SOURCE[0]}")/inifile.py

# The values stack.sh and stackrc would give these on a one-node cloud.
DEST=$STANDIN_ROOT/opt/stack
DATA_DIR=$DEST/data
STACK_USER=$(id -un)
HOST_IP=192.0.2.10
SERVICE_HOST=$HOST_IP
SERVICE_PROTOCOL=http
SERVICE_TIMEOUT=60
REGION_NAME=RegionOne
SERVICE_PASSWORD='service-secret'
SERVICE_PROJECT_NAME=service
SERVICE_DOMAIN_NAME=Default
KEYSTONE_SERVICE_URI=$SERVICE_PROTOCOL://$SERVICE_HOST/identity
ENABLE_DEBUG_LOG_LEVEL=True
API_WORKERS=2
LIBVIRT_GROUP=libvirt
NOVA_CONF=$STANDIN_ROOT/etc/nova/nova.conf
NOVA_FILTERS=ComputeFilter,ComputeCapabilitiesFilter,ImagePropertiesFilter
HORIZON_DIR=$DEST/horizon
TEMPEST_CONFIG=$DEST/tempest/etc/tempest.conf

_record() {
    local quoted
    quoted=$(printf '%q ' "$@")
    echo "${quoted% }" >>"$STANDIN_LOG"
}

# run_plugin MODE [PHASE...]: source plugin.sh once per phase, as stack.sh
# does (unstack.sh and clean.sh give no phase), with a marker line each.
run_plugin() {
    local mode=$1 phase
    shift
    for phase in "${@:-}"; do
        _record "==" "$mode" "$phase"
        # shellcheck source=devstack/plugin.sh
        source "$MEMAGG_DIR/devstack/plugin.sh" "$mode" "$phase"
    done
}

# DevStack's semantics: true when any one of the services is enabled; nova
# stands for any n-* service, keystone for the service named key.
is_service_enabled() {
    local service
    for service in "$@"; do
        [[ ",$ENABLED_SERVICES," == *",$service,"* ]] && return 0
        [[ $service == nova && ",$ENABLED_SERVICES" == *",n-"* ]] && return 0
        [[ $service == keystone && ",$ENABLED_SERVICES," == *",key,"* ]] &&
            return 0
    done
    return 1
}

# Enabling a service the operator disabled is ignored, as in DevStack.
enable_service() {
    local service
    for service in "$@"; do
        [[ ",$DISABLED_SERVICES," == *",$service,"* ]] && continue
        is_service_enabled "$service" || ENABLED_SERVICES+=",$service"
    done
}

is_ubuntu() { return 0; }
get_python_exec_prefix() { echo "$STANDIN_ROOT/bin"; }
echo_summary() { _record echo_summary "$@"; }
warn() { _record warn "$@"; }
die() {
    _record die "$@"
    exit 1
}
install_package() { _record install_package "$@"; }
setup_develop() { _record setup_develop "$@"; }
sudo() {
    _record sudo "$@"
    "$@"
}

iniset() {
    _record iniset "$@"
    mkdir -p "$(dirname "$1")"
    "$STANDIN_PYTHON" "$_STANDIN_INIFILE" set "$1" "$2" "$3" "$4"
}
iniset_multiline() {
    _record iniset_multiline "$@"
    mkdir -p "$(dirname "$1")"
    "$STANDIN_PYTHON" "$_STANDIN_INIFILE" set-multi "$@"
}
iniadd() {
    _record iniadd "$@"
    local file=$1 section=$2 option=$3 values
    shift 3
    read -ra values <<<"$(iniget_multiline "$file" "$section" "$option")"
    "$STANDIN_PYTHON" "$_STANDIN_INIFILE" set-multi "$file" "$section" \
        "$option" "${values[@]}" "$@"
}
iniget() { "$STANDIN_PYTHON" "$_STANDIN_INIFILE" get "$@"; }
iniget_multiline() { "$STANDIN_PYTHON" "$_STANDIN_INIFILE" get-multi "$@"; }

# A SQLite file stands for the MySQL database, so that memagg-manage can
# really migrate it.
database_connection_url() {
    echo "sqlite:///$DATA_DIR/$1.sqlite"
}
recreate_database() {
    _record recreate_database "$@"
    mkdir -p "$DATA_DIR"
    rm -f "$DATA_DIR/$1.sqlite"
}
iniset_rpc_backend() {
    _record iniset_rpc_backend "$@"
    iniset "$2" DEFAULT transport_url \
        "rabbit://stackrabbit:secret@$SERVICE_HOST:5672/"
}
configure_keystone_authtoken_middleware() {
    _record configure_keystone_authtoken_middleware "$@"
    iniset "$1" keystone_authtoken auth_type password
    iniset "$1" keystone_authtoken auth_url "$KEYSTONE_SERVICE_URI"
    iniset "$1" keystone_authtoken username "$2"
    iniset "$1" keystone_authtoken password "$SERVICE_PASSWORD"
}

create_service_user() { _record create_service_user "$@"; }
get_or_create_service() {
    _record get_or_create_service "$@"
    echo "service-id-$1"
}
get_or_create_endpoint() {
    _record get_or_create_endpoint "$@"
    echo "endpoint-id-$1"
}

# The uWSGI ini behind Apache's proxy, as DevStack writes it (its first
# lines); Apache itself is not configured.
write_uwsgi_config() {
    _record write_uwsgi_config "$@"
    rm -f "$1"
    iniset "$1" uwsgi module "$2"
    iniset "$1" uwsgi processes "$API_WORKERS"
    iniset "$1" uwsgi master true
    iniset "$1" uwsgi socket "/var/run/uwsgi/$5.socket"
}
remove_uwsgi_config() {
    _record remove_uwsgi_config "$@"
    rm -f "$1"
}
apache_site_config_for() {
    echo "$STANDIN_ROOT/etc/apache2/sites-available/$1.conf"
}

# Like DevStack's, these act only on enabled services.
run_process() {
    is_service_enabled "$1" && _record run_process "$@"
    return 0
}
stop_process() {
    is_service_enabled "$1" && _record stop_process "$@"
    return 0
}
wait_for_service() { _record wait_for_service "$@"; }
