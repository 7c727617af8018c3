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
 * A test program's scratch directory: made from a mkdtemp template at the
 * start, removed with all it holds at the end.
 */
#ifndef MEMAGG_SWAPD_TEST_SCRATCH_DIR_H
#define MEMAGG_SWAPD_TEST_SCRATCH_DIR_H

#include <stdio.h>
#include <stdlib.h>

/* The directory made from tmpl (ending in XXXXXX) into dir; -1 (said)
 * when it cannot be made. */
static inline int scratch_dir_make(char *dir, size_t len, const char *tmpl)
{
    snprintf(dir, len, "%s", tmpl);
    if (!mkdtemp(dir)) {
        perror("mkdtemp");
        return -1;
    }
    return 0;
}

static inline void scratch_dir_remove(const char *dir)
{
    char cmd[128];

    snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
    if (system(cmd)) {
        fprintf(stderr, "cannot remove %s\n", dir);
    }
}

#endif
