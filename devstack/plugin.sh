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

# devstack plug-in of memagg: devstack sources this at each phase of
# stack.sh, unstack.sh and clean.sh with the mode and phase as arguments
# (devstack's doc/source/plugins.rst), devstack/settings already sourced.

# shellcheck source=devstack/lib/memagg
source "$MEMAGG_DIR/devstack/lib/memagg"

if is_service_enabled memagg-api memagg-scheduler memagg-compute memagg-swapd; then
    case "$1 ${2:-}" in
        "stack pre-install")
            # Before install: pip builds memagg's C extensions then.
            echo_summary "Installing memagg's build dependencies"
            install_memagg_build_deps
            ;;
        "stack install")
            echo_summary "Installing memagg"
            install_memagg
            ;;
        "stack post-config")
            echo_summary "Configuring memagg, and Nova and Horizon for it"
            configure_memagg
            ;;
        "stack extra")
            echo_summary "Initialising and starting memagg"
            init_memagg
            start_memagg
            ;;
        "stack test-config")
            if is_service_enabled tempest; then
                echo_summary "Configuring tempest for memagg"
                configure_tempest_for_memagg
            fi
            ;;
        "unstack ")
            stop_memagg
            ;;
        "clean ")
            # clean.sh has run unstack.sh first.
            cleanup_memagg
            ;;
    esac
fi
