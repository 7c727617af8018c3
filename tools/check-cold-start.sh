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

# Prove tools/setup.sh brings up RabbitMQ, MariaDB and PostgreSQL from cold,
# without touching the services this machine is running.
#
# Inside new mount, network, PID and IPC namespaces (root only), the services'
# state directories are replaced by empty tmpfs, freshly initialised as
# Debian's packages do on install (pg_createcluster; mariadb-install-db with
# root by unix socket only), and nothing listens on 127.0.0.1. Then
# tools/setup.sh runs, and the database and RabbitMQ tests run against what
# it started (PYTEST-ARGS, default: the MariaDB and PostgreSQL DB tests).
# Leaving the PID namespace ends every process started in it.
#
#   ./tools/check-cold-start.sh [PYTEST-ARGS...]
set -euo pipefail

repo=$(cd "$(dirname "$0")/.." && pwd)
if [ "${MEMAGG_COLD_INSIDE:-}" != 1 ]; then
    [ "$(id -u)" -eq 0 ] || { echo "check-cold-start: run as root" >&2; exit 1; }
    # Packages and venvs first, out here: the namespace has no network.
    "$repo/tools/setup.sh"
    exec env MEMAGG_COLD_INSIDE=1 unshare --mount --net --pid --ipc --fork \
        --mount-proc "$0" "$@"
fi

say() { echo "check-cold-start: $*"; }

ip link set lo up
fresh() {  # fresh DIR OWNER MODE: an empty tmpfs at DIR, private to us
    mkdir -p "$1"
    mount -t tmpfs -o "mode=$3" tmpfs "$1"
    chown "$2" "$1"
}
fresh /run root:root 755
fresh /var/lib/postgresql postgres:postgres 755
fresh /etc/postgresql postgres:postgres 755
fresh /var/log/postgresql root:postgres 1775
fresh /var/lib/mysql mysql:mysql 755
fresh /var/log/mysql mysql:adm 2750
fresh /var/lib/rabbitmq rabbitmq:rabbitmq 755
fresh /var/log/rabbitmq rabbitmq:rabbitmq 755

version=$(basename "$(ls -d /usr/lib/postgresql/*/ | sort -V | tail -1)")
say "initialising PostgreSQL $version and MariaDB as a fresh install would"
pg_createcluster "$version" main >/dev/null
mariadb-install-db --user=mysql --datadir=/var/lib/mysql \
    --auth-root-authentication-method=socket >/dev/null

for port in 5432 3306 5672; do
    if timeout 2 bash -c "exec 3<>/dev/tcp/127.0.0.1/$port" 2>/dev/null; then
        say "ERROR: port $port answers before setup" >&2
        exit 1
    fi
done

say "running tools/setup.sh from cold"
start=$SECONDS
"$repo/tools/setup.sh"
say "setup took $((SECONDS - start)) s"
say "second run (must do nothing)"
"$repo/tools/setup.sh"

cd "$repo"
say "checking RabbitMQ takes guest over AMQP"
.venv/bin/python -c "import kombu
with kombu.Connection('amqp://guest:guest@127.0.0.1:5672//') as conn:
    conn.connect()"
if [ $# -eq 0 ]; then
    set -- memagg/tests/functional/db -q -k 'mysql or postgresql'
fi
.venv/bin/pytest -p no:cacheprovider "$@"
