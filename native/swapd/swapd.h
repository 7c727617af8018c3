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
 * memagg-swapd: definitions shared by the daemon's modules.
 *
 * Functions that can fail return 0 or a negative errno value; where a
 * caller needs words, they also fill a char buffer of SD_ERRLEN bytes.
 */
#ifndef MEMAGG_SWAPD_H
#define MEMAGG_SWAPD_H

#include <stddef.h>
#include <stdint.h>

#define SD_PAGE_SIZE 4096U
#define SD_UUID_LEN 16          /* a grant's uuid, binary */
#define SD_KEY_LEN 32           /* a grant's secret, binary (64 hex chars) */
#define SD_ERRLEN 256

enum sd_op {
    SD_OP_READ = 1,
    SD_OP_WRITE = 2,
};

/* log.c: one line to stderr, "memagg-swapd: LEVEL: message".  prio is a
 * syslog priority (LOG_ERR, LOG_WARNING, LOG_INFO, LOG_DEBUG). */
void sd_log(int prio, const char *fmt, ...)
    __attribute__((format(printf, 2, 3)));
extern int sd_log_level;        /* messages above it are dropped */

/* Constant-time comparison of two keys: 1 when equal. */
int sd_key_equal(const uint8_t a[SD_KEY_LEN], const uint8_t b[SD_KEY_LEN]);

#endif
