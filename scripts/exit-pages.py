#!/usr/bin/env python3
"""Distinct pages touched per exit, from a valgrind lackey trace.

scripts/exit-pages.sh runs `govmm bench-exits` under
`valgrind --tool=lackey --trace-mem=yes` and hands the trace here with
the entry address of vcpu.(*VCPU).handleExit (once per exit). The trace
is cut at each entry; for each of bench-exits' three loops (port, MMIO,
x2APIC TPR write: floor.elf runs them in that order, COUNT exits each)
it prints the median number of distinct 4 KiB pages of code and of data
the process touched between two exits, and the instructions between.

Why pages: in the nested AMD-V host QEMU's TCG flushes its software TLB
at each world switch, so every page the VMM touches between two entries
costs a page walk there (about 500 cycles per page measured:
docs/exit-cost.md).

  exit-pages.py TRACE HANDLEEXIT_HEX COUNT
"""
import statistics
import sys


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: exit-pages.py TRACE HANDLEEXIT_HEX COUNT")
    trace, entry, count = sys.argv[1], int(sys.argv[2], 16), int(sys.argv[3])
    segs = []
    code, data, instr = set(), set(), 0
    with open(trace, errors="replace") as f:
        for line in f:
            if line.startswith("I  "):
                addr = int(line[3:].split(",", 1)[0], 16)
                if addr == entry:
                    segs.append((len(code), len(data), instr))
                    code, data, instr = set(), set(), 0
                code.add(addr >> 12)
                instr += 1
            elif line[:1] == " " and line[1:2] in "LSM":
                data.add(int(line[3:].split(",", 1)[0], 16) >> 12)
    # The loops' exits are the last 3*count; the first of each loop's
    # exits and its last few are left out (a loop's start and end).
    if len(segs) < 3 * count:
        sys.exit("exit-pages: %d exits in the trace, fewer than 3 x %d" % (len(segs), count))
    loops = segs[len(segs) - 3 * count:]
    for i, name in enumerate(["port read", "MMIO read", "x2APIC TPR write"]):
        w = loops[i * count + count // 4: (i + 1) * count - count // 4]
        c = statistics.median(s[0] for s in w)
        d = statistics.median(s[1] for s in w)
        n = statistics.median(s[2] for s in w)
        print("%-17s %3d pages (%d code, %d data), %d instructions per exit" % (name, c + d, c, d, n))


if __name__ == "__main__":
    main()
