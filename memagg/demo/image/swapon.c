/*
 * Licensed under the Apache License, Version 2.0 (the "License"); you may
 * not use this file except in compliance with the License. You may obtain
 * a copy of the License at
 *
 *      http://www.apache.org/licenses/LICENSE-2.0
 *
 * Unless required by applicable law or agreed to in writing, software
 * distributed under the License is distributed on an "AS IS" BASIS, WITHOUT
 * WARRANTIES OR CONDITIONS OF ANY KIND, either express or implied. See the
 * License for the specific language governing permissions and limitations
 * under the License.
 */

/*
 * swapon for memagg's test guest: "swapon [-p PRIORITY] DEVICE".
 *
 * The guest's busybox (Debian's busybox-static) is built without swapon's
 * -p, and memagg's guest rule (etc/memagg/guest/memagg-swap-enable) gives
 * its disks the highest priority with "swapon -p 32767" as util-linux does
 * in real guest images. build.sh links this statically and installs it as
 * /sbin/swapon, where the script looks for util-linux's, so the test guest
 * runs the rule's script as a real guest would.
 */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/swap.h>

static int usage(void)
{
    fprintf(stderr, "usage: swapon [-p PRIORITY] DEVICE "
            "(PRIORITY: 0..%d)\n", SWAP_FLAG_PRIO_MASK);
    return 2;
}

int main(int argc, char **argv)
{
    int flags = 0;
    int i = 1;

    if (argc > 2 && strcmp(argv[1], "-p") == 0) {
        char *end;
        long prio = strtol(argv[2], &end, 10);

        if (*argv[2] == '\0' || *end != '\0' || prio < 0 ||
            prio > SWAP_FLAG_PRIO_MASK) {
            fprintf(stderr, "swapon: -p: '%s' is not a priority in 0..%d\n",
                    argv[2], SWAP_FLAG_PRIO_MASK);
            return 2;
        }
        flags = SWAP_FLAG_PREFER |
                ((int)prio << SWAP_FLAG_PRIO_SHIFT & SWAP_FLAG_PRIO_MASK);
        i = 3;
    }
    if (argc != i + 1 || argv[i][0] == '-')
        return usage();
    if (swapon(argv[i], flags) < 0) {
        fprintf(stderr, "swapon: %s: %s\n", argv[i], strerror(errno));
        return 1;
    }
    return 0;
}
