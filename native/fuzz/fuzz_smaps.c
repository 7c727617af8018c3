/* libFuzzer harness: /proc/PID/smaps text, with the range from its head. */
#include <stdint.h>
#include <string.h>

#include "ms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t range[2] = { 0, UINT64_MAX }, ref, rss;

    if (size >= sizeof(range)) {
        memcpy(range, data, sizeof(range));
        data += sizeof(range);
        size -= sizeof(range);
    }
    ms_smaps_scan((const char *)data, size, range[0], range[1], &ref, &rss);
    return 0;
}
