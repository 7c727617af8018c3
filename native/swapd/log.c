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

/* sd_log: one line per message on stderr, written with one write() so
 * lines of different threads do not interleave. */
#include <stdarg.h>
#include <stdio.h>
#include <syslog.h>
#include <unistd.h>

#include "swapd.h"

int sd_log_level = LOG_INFO;

static const char *level_name(int prio)
{
    switch (prio) {
    case LOG_EMERG:
    case LOG_ALERT:
    case LOG_CRIT:
    case LOG_ERR:
        return "ERROR";
    case LOG_WARNING:
        return "WARNING";
    case LOG_NOTICE:
    case LOG_INFO:
        return "INFO";
    default:
        return "DEBUG";
    }
}

void sd_log(int prio, const char *fmt, ...)
{
    char line[1024];
    va_list ap;
    int n, m;

    if (prio > sd_log_level) {
        return;
    }
    n = snprintf(line, sizeof(line), "memagg-swapd: %s: ", level_name(prio));
    va_start(ap, fmt);
    m = vsnprintf(line + n, sizeof(line) - (size_t)n - 1, fmt, ap);
    va_end(ap);
    if (m < 0) {
        return;
    }
    n += m;
    if ((size_t)n > sizeof(line) - 2) {
        n = (int)sizeof(line) - 2;      /* truncated: still one line */
    }
    line[n++] = '\n';
    if (write(STDERR_FILENO, line, (size_t)n) < 0) {
        return;         /* nowhere left to say it */
    }
}
