/*
 * libFuzzer harness: sysfs numbers (DAMON's total_bytes, nr_kdamonds,
 * kdamond pid, schedstat) and word lists (avail_operations).
 */
#include <stdint.h>

#include "ms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uint64_t v;

    ms_parse_u64((const char *)data, size, &v);
    ms_word_list_has((const char *)data, size, "paddr");
    ms_word_list_has((const char *)data, size, "");
    return 0;
}
