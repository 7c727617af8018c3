#!/usr/bin/env bash
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

# Prepare this Debian 12 machine to run and test memagg, from a clean clone.
#
#  1. apt-get installs what is missing (RabbitMQ, MariaDB, PostgreSQL, Redis,
#     libvirt + QEMU, build tools); apt-get update only when something is.
#  2. Starts RabbitMQ, MariaDB, PostgreSQL and Redis when their port does not
#     answer, and makes root@127.0.0.1 (MariaDB, no password) and
#     postgres@127.0.0.1 (PostgreSQL, trust) reachable, as the tests expect.
#  3. Creates .venv (memagg and its client python-memaggclient, editable,
#     with test requirements) and
#     .venv-keystone (a real Keystone for the auth tests; its own venv so its
#     pins do not fight memagg's).
#  4. Creates .venv-tempest: tempest, and memagg's tempest plug-in found by
#     its entry point (memagg installed there without its dependencies).
#  5. Mounts tracefs on /sys/kernel/tracing when it is not, as systemd does.
#
# Idempotent: a second run checks and returns in seconds. Run as root (or a
# user with sudo).
set -euo pipefail

cd "$(dirname "$0")/.."
PYTHON=${PYTHON:-python3}
KEYSTONE_VERSION=30.0.0
TEMPEST_VERSION=47.0.0
SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo

APT_PACKAGES=(
    rabbitmq-server mariadb-server postgresql redis-server
    libvirt-daemon-system libvirt-daemon-driver-qemu libvirt-dev
    qemu-system-x86 qemu-utils pkg-config cpio busybox-static
    gcc python3-dev python3-venv make clang libclang-rt-14-dev
    rdma-core libfabric-dev ibverbs-providers libssl-dev
    fio nbdkit libnbd-bin iproute2 wrk tini
    shellcheck
    chromium chromium-driver
)

say() { echo "setup: $*"; }
die() { echo "setup: ERROR: $*" >&2; exit 1; }

install_packages() {
    local missing=() pkg
    for pkg in "${APT_PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null \
            | grep -q 'install ok installed' || missing+=("$pkg")
    done
    [ ${#missing[@]} -eq 0 ] && return
    say "installing ${missing[*]}"
    $SUDO apt-get update -q
    $SUDO env DEBIAN_FRONTEND=noninteractive \
        apt-get install -y -q --no-install-recommends "${missing[@]}" </dev/null
}

port_open() {
    timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$1" 2>/dev/null
}

# wait_until SECONDS WHAT COMMAND...: poll COMMAND until it succeeds.
wait_until() {
    local limit=$1 what=$2
    local deadline=$((SECONDS + limit))
    shift 2
    until "$@"; do
        [ $SECONDS -lt $deadline ] || die "$what not ready after $limit s"
        sleep 0.5
    done
}

pg_ok() {
    psql -h 127.0.0.1 -U postgres -w -d postgres -Atqc 'SELECT 1' \
        >/dev/null 2>&1
}

start_postgresql() {
    local version
    version=$(ls /etc/postgresql 2>/dev/null | sort -V | tail -1)
    [ -n "$version" ] || die "no PostgreSQL cluster in /etc/postgresql"
    if ! port_open 5432; then
        say "starting PostgreSQL $version"
        $SUDO pg_ctlcluster --skip-systemctl-redirect "$version" main start
        wait_until 60 PostgreSQL port_open 5432
    fi
    if ! pg_ok; then
        # A fresh cluster asks for a password over TCP; the tests connect as
        # postgres without one, from this machine only. First match wins.
        say "allowing postgres@127.0.0.1 without password (pg_hba.conf)"
        $SUDO sed -i '1i host all all 127.0.0.1/32 trust' \
            "/etc/postgresql/$version/main/pg_hba.conf"
        $SUDO pg_ctlcluster --skip-systemctl-redirect "$version" main reload
        wait_until 30 "PostgreSQL login as postgres" pg_ok
    fi
}

mysql_ok() {
    mariadb --protocol=TCP -h 127.0.0.1 -u root -e 'SELECT 1' \
        >/dev/null 2>&1
}

start_mariadb() {
    if ! port_open 3306; then
        say "starting MariaDB"
        $SUDO install -d -o mysql -g mysql /run/mysqld
        $SUDO start-stop-daemon --start --oknodo --background \
            --exec /usr/sbin/mariadbd -- --user=mysql
        wait_until 60 MariaDB port_open 3306
    fi
    if ! mysql_ok; then
        # A fresh install lets root in only through the unix socket; the tests
        # log in as root over TCP with no password, from this machine only.
        say "allowing root@127.0.0.1 without password (MariaDB)"
        $SUDO mariadb -u root -e "
            ALTER USER root@localhost IDENTIFIED VIA unix_socket
                OR mysql_native_password USING PASSWORD('');
            CREATE USER IF NOT EXISTS root@'127.0.0.1' IDENTIFIED BY '';
            GRANT ALL ON *.* TO root@'127.0.0.1' WITH GRANT OPTION;"
        wait_until 10 "MariaDB login as root" mysql_ok
    fi
}

# Redis: the coordination backend of the scheduler workers' tests on Redis.
start_redis() {
    port_open 6379 && return
    say "starting Redis"
    $SUDO runuser -u redis -- /usr/bin/redis-server --bind 127.0.0.1 \
        --port 6379 --daemonize yes --save '' --appendonly no --dir /tmp
    wait_until 30 Redis port_open 6379
}

start_rabbitmq() {
    port_open 5672 && return
    say "starting RabbitMQ"
    $SUDO rabbitmq-server -detached
    # The broker takes a while to boot its Erlang node.
    wait_until 120 RabbitMQ port_open 5672
}

# libvirt for the real-guest tests: virtlogd (guest consoles) and libvirtd,
# each started when it is not running. libvirtd runs under tini -s, a
# subreaper: the QEMUs it daemonizes are then reaped as soon as they exit.
# This machine's PID 1 reaps orphans only every ~2 s, and libvirtd waits for
# a QEMU's zombie to go at every destroy and at every migration's confirm
# step, where a host's systemd reaps it at once: each of them took 1.8 s
# more here without it.
start_libvirt() {
    if ! pidof virtlogd >/dev/null; then
        say "starting virtlogd"
        $SUDO virtlogd -d
    fi
    if ! pidof libvirtd >/dev/null; then
        say "starting libvirtd"
        $SUDO setsid tini -s -- libvirtd </dev/null >/dev/null 2>&1 &
    fi
    wait_until 30 libvirtd virsh -q -c qemu:///system version
}

# tracefs where a systemd host mounts it (sys-kernel-tracing.mount): the
# damon_paddr sampler reads its kdamond's answer through DAMON's trace event
# there, and through one sysfs directory per accessed page without it.
mount_tracefs() {
    if [ -d /sys/kernel/tracing ] && ! mountpoint -q /sys/kernel/tracing; then
        say "mounting tracefs on /sys/kernel/tracing"
        $SUDO mount -t tracefs nodev /sys/kernel/tracing ||
            say "cannot mount tracefs: DAMON answers through sysfs directories"
    fi
}

# pip, minus the noise: warnings about this machine's extra (local) indexes,
# and setuptools' deprecation banners while it builds the editable install.
pip_quiet() {
    PYTHONWARNINGS=ignore "$@" 2>&1 | { grep -v 'is ignored: it is neither a file nor a directory' || true; }
    return "${PIPESTATUS[0]}"
}

# make_venv DIR STAMP PIP-ARGS...: (re)install into DIR unless STAMP
# matches. Runs in the background with its output in DIR.log: the three
# venvs build at once, as pip mostly waits on downloads. wait_venvs collects
# them.
VENV_JOBS=()
make_venv() {
    local dir=$1 stamp=$2
    shift 2
    if [ -x "$dir/bin/python" ] && [ "$(cat "$dir/.setup-stamp" 2>/dev/null)" = "$stamp" ]; then
        return
    fi
    say "installing $dir"
    (
        set -e
        [ -x "$dir/bin/python" ] || "$PYTHON" -m venv "$dir"
        pip_quiet "$dir/bin/pip" install -q --upgrade pip
        pip_quiet "$dir/bin/pip" install -q "$@"
        echo "$stamp" >"$dir/.setup-stamp"
    ) >"$dir.log" 2>&1 &
    VENV_JOBS+=("$!:$dir")
}

wait_venvs() {
    local job failed=()
    for job in "${VENV_JOBS[@]}"; do
        if ! wait "${job%%:*}"; then
            cat "${job#*:}.log" >&2
            failed+=("${job#*:}")
        fi
    done
    [ ${#failed[@]} -eq 0 ] || die "pip failed for ${failed[*]} (output above)"
}

install_packages
start_postgresql
start_mariadb
start_rabbitmq
start_redis
start_libvirt
mount_tracefs
# Exact versions from upper-constraints.txt (tools/generate-constraints.sh).
# The client (python-memaggclient, which memagg requires) comes from its
# directory here, named in the same pip command, so that pip never looks
# for it on an index; upper-constraints.txt does not pin it.
make_venv .venv \
    "$(cat setup.cfg setup.py requirements.txt test-requirements.txt \
        doc/requirements.txt upper-constraints.txt \
        python-memaggclient/setup.cfg python-memaggclient/setup.py \
        python-memaggclient/requirements.txt \
        native/src/* native/swapd/*.[ch] 2>/dev/null | sha256sum)" \
    -c upper-constraints.txt \
    -e ./python-memaggclient -e '.[sim]' \
    -r test-requirements.txt -r doc/requirements.txt
make_venv .venv-keystone "keystone==$KEYSTONE_VERSION" \
    "keystone==$KEYSTONE_VERSION"
make_venv .venv-tempest "tempest==$TEMPEST_VERSION" "tempest==$TEMPEST_VERSION"
wait_venvs
# tempest imports only tempest_plugin, never memagg's dependencies; the
# editable install gives it the entry point (setup.cfg) and the tree's code.
# It waits for .venv: both editable installs build the C extensions into the
# tree, and two at once would race on the same files.
plugin_stamp=$(cat setup.cfg setup.py | sha256sum)
if [ "$(cat .venv-tempest/.plugin-stamp 2>/dev/null)" != "$plugin_stamp" ]; then
    say "installing memagg's tempest plug-in into .venv-tempest"
    pip_quiet .venv-tempest/bin/pip install -q --no-deps -e .
    echo "$plugin_stamp" >.venv-tempest/.plugin-stamp
fi
say "ready: RabbitMQ :5672, MariaDB :3306, PostgreSQL :5432, libvirtd, .venv, .venv-keystone, .venv-tempest"
