/* libFuzzer harness: pagemap entries and idle-bitmap words, decoded. */
#include <stdint.h>
#include <string.h>

#include "ms.h"

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    struct ms_pagemap_entry e;
    uint64_t raw;
    size_t i;

    for (i = 0; i + sizeof(raw) <= size; i += sizeof(raw)) {
        memcpy(&raw, data + i, sizeof(raw));
        ms_pagemap_decode(raw, &e);
        if (e.pfn >> 55 || (!e.present && e.pfn)) {
            __builtin_trap();
        }
    }
    return 0;
}
