#!/usr/bin/env bash
# devstack plug-in of memagg: devstack calls this at each phase of stack.sh,
# unstack.sh and clean.sh with the phase as arguments.

# shellcheck source=devstack/lib/memagg
source "$MEMAGG_DIR/devstack/lib/memagg"

if is_service_enabled memagg-api memagg-scheduler memagg-compute memagg-swapd; then
    case "$1 ${2:-}" in
        "stack install")
            echo_summary "Installing memagg"
            install_memagg
            ;;
        "stack post-config")
            echo_summary "Configuring memagg"
            configure_memagg
            ;;
        "stack extra")
            echo_summary "Initialising and starting memagg"
            init_memagg
            start_memagg
            ;;
    esac

    if [[ "$1" == "unstack" ]]; then
        stop_memagg
    fi

    if [[ "$1" == "clean" ]]; then
        cleanup_memagg
    fi
fi
