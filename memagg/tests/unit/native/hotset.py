"""Child process with a known hot set: maps TOTAL MiB, touches all of it
once, prints the mapping's address, then writes one byte per page of the
first HOT MiB forever, counting its passes over the hot set in the 8-byte
file PASSES (optional) so a test can wait for whole passes."""
import ctypes
import mmap
import struct
import sys

PAGE = 4096


def main():
    total = int(sys.argv[1]) << 20
    hot = int(sys.argv[2]) << 20
    mem = mmap.mmap(-1, total, flags=mmap.MAP_PRIVATE | mmap.MAP_ANONYMOUS)
    mem[0:total:PAGE] = b'\x01' * (total // PAGE)
    addr = ctypes.addressof(ctypes.c_char.from_buffer(mem))
    print(addr, flush=True)
    ones = b'\x02' * (hot // PAGE)
    passes = None
    if len(sys.argv) > 3:
        with open(sys.argv[3], 'r+b') as f:
            passes = mmap.mmap(f.fileno(), 8)
    count = 0
    while True:
        mem[0:hot:PAGE] = ones
        if passes is not None:
            count += 1
            passes[0:8] = struct.pack('Q', count)


if __name__ == '__main__':
    main()
