#!/usr/bin/env python3
"""One step of an IPI round trip, page by page, from a lackey trace of
`govmm bench-rtt` (scripts/rtt-pages.sh says how one is taken; it deletes
its traces, so take one by hand with the same valgrind line).

rtt-pages.py counts each step's pages; this lists, for the step of the
median page count, every page it touched: code pages with the functions
that ran on them (distinct instructions each), data pages with the
functions that read or wrote them and, for the binary's own data, the
symbol the page starts in. That is how the cuts in docs/exit-cost.md were
found (an itab's page, a package variable beside the runtime's, a zero
value read from runtime.zeroVal).

  go tool nm -n -size GOVMM > nm.txt
  rtt-pages-dump.py TRACE nm.txt STEP

STEP: send+wake, send+kick, halt, eoi, eoi+sig (as rtt-pages.py's rows,
without the thread's role).
"""
import bisect
import collections
import re
import sys

PKG = "github.com/govmm/govmm/"
SCHED = re.compile(r"SCHED\[(\d+)\]:\s+acquired lock")


def load_syms(path):
    syms = []
    for line in open(path):
        p = line.split(None, 3)
        if len(p) < 4:
            continue
        try:
            syms.append((int(p[0], 16), int(p[1]), p[3].strip()))
        except ValueError:
            continue
    syms.sort()
    return syms


def main():
    if len(sys.argv) != 4:
        sys.exit("usage: rtt-pages-dump.py TRACE NM_FILE STEP")
    trace, nmfile, want = sys.argv[1:]
    syms = load_syms(nmfile)
    addrs = [s[0] for s in syms]

    def sym(a):
        i = bisect.bisect_right(addrs, a) - 1
        if i < 0:
            return "?"
        s = syms[i]
        return s[2] if a < s[0] + max(s[1], 1) else "?" + s[2]

    def find(name):
        for s in syms:
            if s[2] == name:
                return s[0]
        return None

    entry = find(PKG + "vcpu.(*VCPU).handleExit")
    marks = {find(PKG + "vlapic.(*LAPIC).sendLocked"): "send", find(PKG + "vcpu.(*VCPU).wakeUp"): "wake",
             find(PKG + "vcpu.(*VCPU).halt"): "halt", find(PKG + "vlapic.(*LAPIC).eoiLocked"): "eoi",
             find("runtime.sighandler"): "sig"}
    skip = {find(n) for n in ("runtime.goschedImpl", "runtime.stoplockedm", "runtime.newstack", "runtime.gopreempt_m")}
    skip.discard(None)
    cur, state = None, {}
    segs = collections.defaultdict(list)

    def fresh():  # code pages, data pages (-> functions), instructions, markers, skipped, last instruction
        return [collections.defaultdict(set), collections.defaultdict(set), 0, set(), False, 0]

    with open(trace, errors="replace") as f:
        for line in f:
            c = line[:1]
            if c == "I":
                a = int(line[3:].split(",", 1)[0], 16)
                s = state.get(cur) or state.setdefault(cur, fresh())
                if a == entry:
                    if s[2] and not s[4]:
                        segs[frozenset(s[3])].append(s)
                    s = state[cur] = fresh()
                if a in marks:
                    s[3].add(marks[a])
                elif a in skip:
                    s[4] = True
                s[5] = a
                s[0][a >> 12].add(a)
                s[2] += 1
            elif c == " ":
                s = state.get(cur) or state.setdefault(cur, fresh())
                s[1][int(line[3:].split(",", 1)[0], 16) >> 12].add(s[5])
            elif c == "-":
                m = SCHED.search(line)
                if m:
                    cur = int(m.group(1))

    def step(mk):
        if "send" in mk:
            return "send+wake" if "wake" in mk else "send+kick"
        if "halt" in mk:
            return "halt"
        if "eoi" in mk:
            return "eoi+sig" if "sig" in mk else "eoi"
        return "other"

    cands = sorted((s for mk, v in segs.items() if step(mk) == want for s in v), key=lambda s: len(s[0]) + len(s[1]))
    if not cands:
        sys.exit("no %s step without the scheduler in %s" % (want, trace))
    s = cands[len(cands) // 2]
    print("%s: %d steps; the median: %d code pages, %d data pages, %d instructions" % (want, len(cands), len(s[0]), len(s[1]), s[2]))
    for pg, ins in sorted(s[0].items()):
        fs = collections.Counter(sym(a) for a in ins)
        print("code %x  %s" % (pg, ", ".join("%s(%d)" % (k.replace(PKG, ""), n) for k, n in fs.most_common(6))))
    for pg, ins in sorted(s[1].items()):
        fs = collections.Counter(sym(a) for a in ins if a)
        here = sym(pg << 12).lstrip("?")[:48] if addrs and addrs[0] <= pg << 12 < addrs[-1] else "heap, stack or mmap"
        print("data %x  [page starts in %s]  %s" % (pg, here.replace(PKG, ""), ", ".join(k.replace(PKG, "") for k, _ in fs.most_common(5))))


if __name__ == "__main__":
    main()
