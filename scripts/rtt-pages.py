#!/usr/bin/env python3
"""Distinct pages and instructions per step of an IPI round trip, per vCPU
thread, from a valgrind lackey trace taken with --trace-sched=yes.

scripts/rtt-pages.sh runs `govmm bench-rtt` and the Go floor's
ipi-x2apic loop under `valgrind --tool=lackey --trace-mem=yes
--trace-sched=yes` and hands each trace here with the addresses of the
functions that name a step. lackey prints no thread; valgrind runs one
thread at a time and its scheduler's trace ("SCHED[n]: acquired lock")
says which, so the trace is split by thread, then cut at each entry of
the exit handler. A segment is what one thread ran from one exit to the
next: between two world switches, where the nested AMD-V host's TCG
flushes its software TLB, so each distinct page in it costs a page walk
there (docs/exit-cost.md). Segments are classed by the marker functions
they ran:

  sender  send+wake   the ICR write's exit, the halted target woken
  sender  send+kick   the ICR write's exit, the running target kicked
  receiver halt       the HLT exit, the sleep, the wake-up, the injection
  receiver eoi        the EOI write's exit (halted receiver)
  receiver eoi+sig    the EOI write's exit, the entry the kick ended, the
                      injection (running receiver)

Valgrind runs the process some fifty times slower than the hardware, so
Go's scheduler steps in far more often than it would (the vCPU's yield,
timed with the TSC, and sysmon's preemption): segments that ran any of
the skip functions (the yield's or a preemption's) are left out, and
the count of those kept is shown.

  rtt-pages.py TRACE ENTRY_HEX NAME=HEX... [skip=HEX...]

Names: send, wake, halt, eoi, sig. Without eoi (the Go floor's EOI is
inline) the receiver is the thread that halts, and its other exits are
its EOI writes (govmm's threads change roles between its VMs).
"""
import collections
import re
import statistics
import sys

SCHED = re.compile(r"SCHED\[(\d+)\]:\s+acquired lock")
ORDER = ["sender send+wake", "sender send+kick", "receiver halt", "receiver eoi", "receiver eoi+sig"]


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: rtt-pages.py TRACE ENTRY_HEX NAME=HEX... [skip=HEX...]")
    trace, entry = sys.argv[1], int(sys.argv[2], 16)
    marks, skip = {}, set()
    for a in sys.argv[3:]:
        name, addr = a.split("=")
        if name == "skip":
            skip.add(int(addr, 16))
        else:
            marks[int(addr, 16)] = name
    cur, state = None, {}
    segs = collections.defaultdict(list)  # (thread, markers) -> [(code, data, instr)]
    dropped = collections.Counter()

    def fresh():
        return [set(), set(), 0, set(), False]

    with open(trace, errors="replace") as f:
        for line in f:
            c = line[:1]
            if c == "I":
                addr = int(line[3:].split(",", 1)[0], 16)
                s = state.get(cur)
                if s is None:
                    s = state[cur] = fresh()
                if addr == entry:
                    if s[2]:
                        key = (cur, frozenset(s[3]))
                        if s[4]:
                            dropped[key] += 1
                        else:
                            segs[key].append((len(s[0]), len(s[1]), s[2]))
                    s = state[cur] = fresh()
                if addr in marks:
                    s[3].add(marks[addr])
                elif addr in skip:
                    s[4] = True
                s[0].add(addr >> 12)
                s[2] += 1
            elif c == " ":
                s = state.get(cur)
                if s is None:
                    s = state[cur] = fresh()
                s[1].add(int(line[3:].split(",", 1)[0], 16) >> 12)
            elif c == "-":
                m = SCHED.search(line)
                if m:
                    cur = int(m.group(1))
    # Without an eoi marker (the Go floor's EOI is inline), the receiver
    # is the thread that halts, and its other exits are its EOIs.
    haseoi = "eoi" in marks.values()
    receivers = {t for (t, mk) in list(segs) + list(dropped) if "halt" in mk}
    rows = collections.defaultdict(lambda: [[], 0])
    for (thread, mk), v in segs.items():
        rows[classify(mk, haseoi, thread in receivers)][0].extend(v)
    for (thread, mk), n in dropped.items():
        rows[classify(mk, haseoi, thread in receivers)][1] += n
    for name in ORDER:
        v, n = rows.get(name, ([], 0))
        if not v:
            print("%-22s no segment without the scheduler (%d with it)" % (name, n))
            continue
        code = statistics.median(x[0] for x in v)
        data = statistics.median(x[1] for x in v)
        instr = statistics.median(x[2] for x in v)
        print("%-22s %4d pages (%d code, %d data), %5d instructions  [%d segments, %d left out]"
              % (name, code + data, code, data, instr, len(v), n))


def classify(mk, haseoi, receiver):
    if "send" in mk:
        return "sender send+wake" if "wake" in mk else "sender send+kick"
    if "halt" in mk:
        return "receiver halt"
    if "eoi" in mk or (not haseoi and receiver):
        return "receiver eoi+sig" if "sig" in mk else "receiver eoi"
    return "other"


if __name__ == "__main__":
    main()
