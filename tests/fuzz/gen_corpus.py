#!/usr/bin/env python3
# SPDX-License-Identifier: BSD-3-Clause
"""Write the seed corpus of tests/fuzz/corpus/<target>/ (committed; rerun after
changing an input layout). Each seed is a small well-formed scenario the
fuzzer mutates from; the layouts are described at the top of each target."""
import os
import struct
import sys

HERE = os.path.dirname(os.path.abspath(__file__))

# fuzz_virtq.c opcodes, in enum order.
(SET_DESC, SET_DESC_RAW, SET_MEM_DESC, SET_MEM, POST, POST_RUN, AVAIL_IDX,
 AVAIL_FLAGS, USED_EVENT, DEQUEUE, COMPLETE, COMPLETE_ALL, COMPLETE_BAD, UNGET,
 FLUSH, NOTIFY, READ, WRITE, NO_KICKS, PER_ENTRY, COMPLETE_REPEAT) = range(21)
EVENT_IDX, INDIRECT, TWO_REGIONS, R1_FIRST, PER_ENTRY_CFG, NO_KICKS_CFG = (
    1, 2, 4, 8, 16, 32)
NEXT, WRITEF, INDIR = 1, 2, 4


def vq_header(cfg, qlog, r0_size, r1_size=1, gap=0, avail0=0, used0=0, burst=31,
              r0_off=0, seed=1):
    return struct.pack('<BBBHHBHHBB', cfg, qlog, r0_off, r0_size - 1, r1_size - 1,
                       gap, avail0, used0, burst, seed)


def desc(addr, length, flags, nxt=0, mode=0):
    return struct.pack('<BHHBB', mode, addr, length, flags, nxt)


def set_desc(i, *a, **k):
    return struct.pack('<BH', SET_DESC, i) + desc(*a, **k)


def set_mem_desc(off, *a, **k):
    return struct.pack('<BH', SET_MEM_DESC, off) + desc(*a, **k)


def op(code, fmt='', *args):
    return struct.pack('<B' + fmt, code, *args)


def virtq_seeds():
    # Header then payload buffer in one region, read and written back.
    yield 'basic', (vq_header(0, 4, 4096) +
                    set_desc(0, 0x100, 44, NEXT, 1) + set_desc(1, 0x200, 100, WRITEF) +
                    op(POST, 'H', 0) + op(DEQUEUE, 'B', 0xff) +
                    op(READ, 'BHH', 0, 0, 44) + op(WRITE, 'BBHH', 0, 7, 0, 100) +
                    op(COMPLETE, 'BB', 0, 0) + op(FLUSH) + op(NOTIFY))
    # Adjacent regions, buffers across the boundary, indices about to wrap,
    # EVENT_IDX, unget and dequeue again.
    s = vq_header(EVENT_IDX | TWO_REGIONS, 3, 512, 512, avail0=65533, used0=65533)
    for i in range(4):
        s += set_desc(i, 0x1c0 + i * 0x10, 0x80, WRITEF)
    s += (op(POST_RUN, 'BBB', 4, 0, 1) + op(DEQUEUE, 'B', 0xff) + op(UNGET, 'B', 2) +
          op(DEQUEUE, 'B', 0xff) + op(USED_EVENT, 'H', 65534) +
          op(COMPLETE_ALL) + op(FLUSH) + op(NOTIFY) + op(NOTIFY))
    yield 'wrap-two-regions', s
    # Indirect table straddling the two regions (scattered table walk).
    s = vq_header(INDIRECT | TWO_REGIONS, 2, 256, 256)
    s += set_mem_desc(0xf0, 0x10, 44, NEXT, 1)
    s += set_mem_desc(0x100, 0x40, 60, NEXT, 2)
    s += set_mem_desc(0x110, 0x180, 100, WRITEF)
    s += set_desc(0, 0xf0, 48, INDIR)
    s += (op(POST, 'H', 0) + op(DEQUEUE, 'B', 1) + op(READ, 'BHH', 0, 10, 80) +
          op(COMPLETE, 'BB', 0, 0) + op(FLUSH))
    yield 'indirect-split', s
    # A guest moving avail->idx too far: broken, and it stays so.
    yield 'avail-overrun', (vq_header(0, 2, 64) + set_desc(0, 0, 8, 0) +
                            op(POST, 'H', 0) + op(AVAIL_IDX, 'H', 100) +
                            op(DEQUEUE, 'B', 0xff) + op(DEQUEUE, 'B', 0xff))
    # A descriptor loop after a good chain.
    yield 'loop', (vq_header(0, 1, 64) + set_desc(0, 0, 8, 0) +
                   set_desc(1, 8, 8, NEXT, 1) + op(POST, 'H', 0) + op(POST, 'H', 1) +
                   op(DEQUEUE, 'B', 0xff) + op(UNGET, 'B', 1) + op(COMPLETE, 'BB', 0, 0) +
                   op(FLUSH))
    # Per-entry publication, kicks off, a bogus completion, no-interrupt flag.
    s = vq_header(PER_ENTRY_CFG | NO_KICKS_CFG | EVENT_IDX, 5, 2048)
    s += set_desc(0, 0x400, 16, WRITEF)
    s += (op(POST_RUN, 'BBB', 3, 0, 0) + op(DEQUEUE, 'B', 2) + op(COMPLETE, 'BBI', 1, 1, 5) +
          op(COMPLETE_BAD, 'HI', 3, 1) + op(NOTIFY) + op(PER_ENTRY, 'B', 0) +
          op(AVAIL_FLAGS, 'H', 1) + op(NO_KICKS) + op(DEQUEUE, 'B', 0xff) +
          op(COMPLETE_ALL) + op(FLUSH) + op(NOTIFY))
    yield 'per-entry', s
    # 65536 entries published between two decisions: used->idx is back where
    # the guest was last told, and the device must still notify.
    yield 'notify-wrap', (vq_header(EVENT_IDX, 4, 64) + set_desc(0, 0, 8, WRITEF) +
                          op(POST, 'H', 0) + op(DEQUEUE, 'B', 1) +
                          op(COMPLETE_REPEAT, 'BH', 0, 1) + op(FLUSH) + op(NOTIFY) +
                          op(COMPLETE_REPEAT, 'BH', 0, 65535) +
                          op(COMPLETE_REPEAT, 'BH', 0, 1) + op(FLUSH) + op(NOTIFY))
    # Empty descriptors: first, in the middle of a split header, last, in an
    # indirect table, a chain of nothing else, and writable ones in an rx chain.
    s = vq_header(INDIRECT, 4, 4096)
    s += set_desc(0, 0x800, 0, NEXT, 1) + set_desc(1, 0x100, 44, NEXT, 2)
    s += set_desc(2, 0x200, 100, 0)
    s += set_desc(3, 0x100, 20, NEXT, 4) + set_desc(4, 0x800, 0, NEXT, 5)
    s += set_desc(5, 0x114, 24, 0)
    s += set_desc(6, 0x100, 44, NEXT, 7) + set_desc(7, 0xfff0, 0, 0)
    s += set_mem_desc(0x300, 0x100, 44, NEXT, 1) + set_mem_desc(0x310, 0x800, 0, NEXT, 2)
    s += set_mem_desc(0x320, 0x200, 100, 0)
    s += set_desc(8, 0x300, 48, INDIR)
    s += set_desc(9, 0x800, 0, NEXT, 10) + set_desc(10, 0x800, 0, 0)
    s += (set_desc(11, 0x800, 0, WRITEF | NEXT, 12) +
          set_desc(12, 0x400, 64, WRITEF | NEXT, 13) + set_desc(13, 0x800, 0, WRITEF))
    for head in (0, 3, 6, 8, 9, 11):
        s += op(POST, 'H', head)
    s += (op(DEQUEUE, 'B', 0xff) + op(READ, 'BHH', 1, 10, 40) + op(READ, 'BHH', 4, 0, 44) +
          op(WRITE, 'BBHH', 5, 9, 0, 80) + op(COMPLETE_ALL) + op(FLUSH) + op(NOTIFY))
    yield 'zero-len', s


# fuzz_virtq_packed.c opcodes, in enum order.
(P_SET_DESC, P_POST, P_POST_RAW, P_POST_RUN, P_DRV_POS, P_SET_MEM_DESC, P_SET_MEM,
 P_DRIVER_EVENT, P_DEQUEUE, P_COMPLETE, P_COMPLETE_ALL, P_COMPLETE_BAD, P_UNGET, P_FLUSH,
 P_NOTIFY, P_READ, P_WRITE, P_KICKS, P_PER_ENTRY, P_PENDING, P_CYCLE) = range(21)
WRAP = 0x8000
EV_ENABLE, EV_DISABLE, EV_DESC = 0, 1, 2


def pq_header(cfg, size, r0_size, r1_size=1, gap=0, avail0=WRAP, used0=WRAP, burst=31,
              r0_off=0, seed=1):
    return struct.pack('<BHBHHBHHBB', cfg, size - 1, r0_off, r0_size - 1, r1_size - 1, gap,
                       avail0, used0, burst, seed)


def pdesc(addr, length, flags=0, ident=0, mode=0):
    """A packed descriptor as the target reads it; flags bit0 flips the chain's own NEXT."""
    return struct.pack('<BHHBB', mode, addr, length, flags, ident)


def post(*descs):
    return struct.pack('<BB', P_POST, len(descs) - 1) + b''.join(descs)


def packed_seeds():
    # Header and payload buffer in one chain, read, written, completed, published.
    yield 'basic', (pq_header(0, 16, 4096) +
                    post(pdesc(0x100, 44), pdesc(0x200, 100, WRITEF, ident=5)) +
                    op(P_DEQUEUE, 'B', 0xff) + op(P_READ, 'BHH', 0, 0, 44) +
                    op(P_WRITE, 'BBHH', 0, 7, 0, 100) + op(P_COMPLETE, 'BB', 0, 0) +
                    op(P_FLUSH) + op(P_NOTIFY) + op(P_PENDING))
    # A ring of 3 (not a power of two) from its last slot: chains wrap, unget, the
    # driver's event on a descriptor of the next lap, then laps of the ring.
    s = pq_header(EVENT_IDX | TWO_REGIONS, 3, 512, 512, avail0=WRAP | 2, used0=WRAP | 2)
    for i in range(3):
        s += post(pdesc(0x1c0 + i * 0x10, 0x80, WRITEF, ident=i))
    s += (op(P_DEQUEUE, 'B', 0xff) + op(P_UNGET, 'B', 2) + op(P_DEQUEUE, 'B', 0xff) +
          op(P_DRIVER_EVENT, 'BH', EV_DESC, 0) + op(P_COMPLETE_ALL) + op(P_FLUSH) +
          op(P_NOTIFY) + op(P_NOTIFY) + op(P_CYCLE, 'H', 10) + op(P_NOTIFY))
    yield 'wrap-two-regions', s
    # An indirect table straddling the two regions.
    s = pq_header(INDIRECT | TWO_REGIONS, 8, 256, 256)
    s += op(P_SET_MEM_DESC, 'H', 0xf0) + pdesc(0x10, 44)
    s += op(P_SET_MEM_DESC, 'H', 0x100) + pdesc(0x40, 60)
    s += op(P_SET_MEM_DESC, 'H', 0x110) + pdesc(0x180, 100, WRITEF)
    s += post(pdesc(0xf0, 48, INDIR, ident=3))
    s += (op(P_DEQUEUE, 'B', 1) + op(P_READ, 'BHH', 0, 10, 80) + op(P_COMPLETE, 'BB', 0, 0) +
          op(P_FLUSH))
    yield 'indirect', s
    # A chain whose NEXT leads to a descriptor the driver has not made available (USED
    # set): broken, and it stays so.
    yield 'chain-avail', (pq_header(0, 4, 256) + post(pdesc(0, 8), pdesc(8, 8)) +
                          op(P_SET_DESC, 'HB', 1, 1) + pdesc(8, 8, 16) +
                          op(P_DEQUEUE, 'B', 0xff) + op(P_DEQUEUE, 'B', 0xff) +
                          op(P_PENDING))
    # The driver posts a fifth chain into a ring of 4 whose chains are all out.
    s = pq_header(0, 4, 256)
    for i in range(5):
        s += post(pdesc(i * 16, 16, WRITEF, ident=i % 4))
        s += op(P_DEQUEUE, 'B', 0xff)
    yield 'overrun', s
    # Per-entry publication, kicks off, bad completions, a no-interrupt driver.
    s = pq_header(PER_ENTRY_CFG | NO_KICKS_CFG | EVENT_IDX, 32, 2048)
    s += op(P_POST_RUN, 'BBBBHH', 3, 0, 1, WRITEF, 0x400, 16)
    s += (op(P_DEQUEUE, 'B', 2) + op(P_COMPLETE, 'BBI', 1, 1, 5) +
          op(P_COMPLETE_BAD, 'BHI', 0, 3, 1) + op(P_COMPLETE_BAD, 'BHI', 1, 0, 1) +
          op(P_COMPLETE_BAD, 'BHI', 2, 7, 1) + op(P_NOTIFY) + op(P_PER_ENTRY, 'B', 0) +
          op(P_DRIVER_EVENT, 'BH', EV_DISABLE, 0) + op(P_KICKS, 'B', 0) +
          op(P_DEQUEUE, 'B', 0xff) + op(P_COMPLETE_ALL) + op(P_FLUSH) + op(P_NOTIFY))
    yield 'per-entry', s
    # Laps of a ring of 2 between two decisions, with the driver's event on one of them.
    yield 'notify-laps', (pq_header(EVENT_IDX, 2, 64) +
                          op(P_DRIVER_EVENT, 'BH', EV_DESC, WRAP | 1) +
                          op(P_CYCLE, 'H', 1) + op(P_NOTIFY) + op(P_CYCLE, 'H', 5) +
                          op(P_NOTIFY) + op(P_CYCLE, 'H', 4) + op(P_NOTIFY))
    # Resumed with more descriptors out than the ring has: the next chain breaks it.
    yield 'resume-overrun', (pq_header(0, 4, 64, avail0=1, used0=WRAP) +
                             post(pdesc(0, 8, WRITEF)) + op(P_DEQUEUE, 'B', 0xff))
    # Empty descriptors: first, in the middle, last, in an indirect table, a chain of
    # nothing else.
    s = pq_header(INDIRECT, 16, 4096)
    s += post(pdesc(0x800, 0), pdesc(0x100, 44), pdesc(0x200, 100, WRITEF, ident=1))
    s += op(P_SET_MEM_DESC, 'H', 0x300) + pdesc(0x100, 44)
    s += op(P_SET_MEM_DESC, 'H', 0x310) + pdesc(0x800, 0)
    s += op(P_SET_MEM_DESC, 'H', 0x320) + pdesc(0x200, 100, WRITEF)
    s += post(pdesc(0x300, 48, INDIR, ident=2))
    s += post(pdesc(0x800, 0), pdesc(0x800, 0, ident=4))
    s += (op(P_DEQUEUE, 'B', 0xff) + op(P_READ, 'BHH', 0, 10, 40) +
          op(P_WRITE, 'BBHH', 1, 9, 0, 80) + op(P_COMPLETE_ALL) + op(P_FLUSH) + op(P_NOTIFY))
    yield 'zero-len', s


# fuzz_conn.c opcodes, in enum order.
(C_PKT, C_TX, C_FLOOD, C_RX, C_RX1, C_EVENT, C_OFFER, C_ROOM, C_EOF, C_HUP, C_FAIL, C_FAR,
 C_FAR_TAKE, C_LISTEN, C_LINE, C_INCOMING, C_CONNECT, C_POLL, C_SERVICE, C_SWEEP, C_TIME,
 C_SEQPACKET, C_GUEST, C_RESET, C_QUIET, C_ROUND) = range(26)
SEQ_CFG, SMALL_MBUFS, NO_GUEST, HOLD, LISTENER, SMALL_BUF = 1, 2, 4, 8, 16, 32
# virtio-vsock ops; flows of fuzz_conn.c (guest port, host port, peer CID tables).
REQUEST, RESPONSE, RST, SHUTDOWN, RW, CREDIT_UPDATE, CREDIT_REQUEST = range(1, 8)
# The first host connect gets host port 2^30, which is also the fixed flow 12's.
TO_HOST, TO_HOST_B, TO_NATIVE, HOST_CONNECT, TO_GUEST5 = 0, 1, 8, 12, 16
LEARNED = 0x80
SEQ, EOM, EOM_EOR, BOTH_WAYS = 1, 1 << 2, 2 << 2, 2 << 2
CAP_HDR, CAP_SMALL, CAP_4K, CAP_64K, CAP_MIXED = range(5)


def conn_header(cfg=0, max_conns=3, buf_alloc=0, quota=0, tmo=(100, 100, 100), slots=3,
                gbuf=0):
    return struct.pack('<BBHB3BBB', cfg, max_conns, buf_alloc, quota, *tmo, slots, gbuf)


def gpkt(opc, flow, kind=0, length=0, wmode=0, pmode=0):
    return struct.pack('<BBBBHBB', C_PKT, opc, flow, kind, length, wmode, pmode)


def tx(n=31):
    return op(C_TX, 'B', n)


def rx(n=1, cap=CAP_4K, split=0):
    return op(C_RX, 'BBB', n - 1, cap, split)


def poll(budget=64):
    return op(C_POLL, 'B', budget)


def conn_seeds():
    # A guest connect to a host socket, data in a run, an end that fills up and drains,
    # a credit request, the guest's close.
    s = conn_header() + gpkt(REQUEST, TO_HOST) + tx() + rx()
    s += op(C_ROOM, 'BH', 0, 4000)
    s += gpkt(RW, TO_HOST, length=3000) * 3 + tx() + rx(2)
    s += op(C_ROOM, 'BH', 0, 0x1001) + poll() + gpkt(CREDIT_REQUEST, TO_HOST) + tx() + rx(4)
    s += gpkt(SHUTDOWN, TO_HOST, BOTH_WAYS) + tx() + rx()
    yield 'g2h', s
    # A host end's bytes read straight into the guest's buffers within its window, then
    # its EOF, its hang-up, and the timeout of our SHUTDOWN.
    s = conn_header() + gpkt(REQUEST, TO_HOST_B, wmode=1) + tx() + rx()
    s += op(C_OFFER, 'BHB', 0, 20000, 0) + poll() + rx(8)
    s += gpkt(CREDIT_UPDATE, TO_HOST_B) + tx() + poll() + rx(8)
    s += op(C_EOF, 'B', 0) + poll() + rx(8) + op(C_HUP, 'BB', 0, 0) + poll() + rx(4)
    s += op(C_TIME, 'H', 300) + poll() + rx(4)
    yield 'h2g-direct', s
    # SEQPACKET both ways: messages from the guest in pieces, messages from the end cut
    # into small buffers.
    s = conn_header(SEQ_CFG) + gpkt(REQUEST, TO_HOST, SEQ) + tx() + rx()
    s += (gpkt(RW, TO_HOST, SEQ | EOM, 100) + gpkt(RW, TO_HOST, SEQ, 50) +
          gpkt(RW, TO_HOST, SEQ | EOM_EOR, 50, pmode=3) + tx())
    s += op(C_OFFER, 'BHB', 0, 300, 0) + op(C_OFFER, 'BHB', 0, 70, 0) + poll()
    s += rx(4, CAP_SMALL) + rx(4, CAP_4K, 1)
    s += gpkt(SHUTDOWN, TO_HOST, SEQ | BOTH_WAYS) + tx() + rx()
    yield 'seqpacket', s
    # A pipe to a native listener holding our mbufs: accepted late, data both ways, its
    # far side reads some, then no more, then lets go.
    s = conn_header(HOLD) + gpkt(REQUEST, TO_NATIVE) + tx() + poll() + rx()
    s += op(C_FAR, 'BB', 0, 0) + poll() + rx()
    s += gpkt(RW, TO_NATIVE, length=5000) * 3 + tx() + poll()
    s += op(C_FAR_TAKE, 'BB', 0, 2) + poll() + gpkt(RW, TO_NATIVE, length=700) + tx()
    s += op(C_OFFER, 'BHB', 0, 9000, 0x85) + poll() + rx(8)
    s += op(C_FAR, 'BB', 0, 2) + gpkt(RW, TO_NATIVE, length=100) + tx() + poll()
    s += op(C_HUP, 'BB', 0, 0) + poll() + rx(4)
    yield 'pipe-hold', s
    # A host program on the listener: its CONNECT line with bytes after it, the guest's
    # RESPONSE, data; a second one whose line comes later, a third that never finishes.
    s = conn_header(LISTENER) + op(C_LISTEN, 'BBB', 0, 1, 10) + poll() + rx()
    s += gpkt(RESPONSE, HOST_CONNECT) + tx() + poll() + rx(2)
    s += op(C_OFFER, 'BHB', 0, 500, 0) + poll() + rx(2)
    s += op(C_LISTEN, 'BBB', 1, 0, 0) + poll() + op(C_LINE, 'BB', 1, 1) + poll() + rx()
    s += gpkt(RESPONSE, LEARNED) + gpkt(RW, LEARNED, length=10) + tx() + poll()
    s += op(C_LISTEN, 'BBB', 2, 0, 0) + poll() + op(C_TIME, 'H', 300) + poll() + rx(4)
    yield 'listener', s
    # Another guest's pipe to ours: the REQUEST, the guest's RESPONSE, data both ways.
    s = conn_header() + op(C_INCOMING, 'BB', 1, 0) + op(C_SWEEP) + rx()
    s += gpkt(RESPONSE, TO_GUEST5) + tx() + op(C_SWEEP) + rx()
    s += op(C_OFFER, 'BHB', 0, 3000, 0) + op(C_SWEEP) + rx(2)
    s += gpkt(RW, TO_GUEST5, length=2000) + tx() + op(C_SWEEP)
    s += op(C_INCOMING, 'BB', 1 | 16, 1) + op(C_SWEEP) + rx(2)
    yield 'incoming', s
    # Small mbufs and a quota: the end takes nothing, the guest's packets wait in its
    # ring; then more than the window: RST.
    s = conn_header(SMALL_MBUFS | SMALL_BUF, buf_alloc=20000, quota=5)
    s += gpkt(REQUEST, TO_HOST) + tx() + rx() + op(C_ROOM, 'BH', 0, 0)
    s += gpkt(RW, TO_HOST, length=6000) * 4 + tx() + poll()
    s += op(C_ROOM, 'BH', 0, 0x2001) + poll() + tx() + rx(2)
    s += gpkt(RW, TO_HOST, length=30000) + tx() + rx(2)
    yield 'quota-credit', s
    # Part of a packet written straight to its end, the rest waiting for the quota that
    # another connection holds: the same packet comes again, its written part skipped.
    s = conn_header(quota=1) + gpkt(REQUEST, TO_HOST) + gpkt(REQUEST, TO_HOST_B) + tx() + rx(2)
    s += op(C_ROOM, 'BH', 0, 0) + op(C_ROOM, 'BH', 1, 1000)
    s += gpkt(RW, TO_HOST, length=3000) + gpkt(RW, TO_HOST_B, length=3000) + tx()
    s += op(C_ROOM, 'BH', 0, 0x1001) + poll() + tx() + op(C_ROOM, 'BH', 1, 0x1001) + poll()
    s += rx(4)
    yield 'tx-skip', s
    # A flood of packets nobody owns, the guest gone and back, a quiet table.
    s = conn_header(LISTENER) + op(C_FLOOD, 'HBBI', 299, RW, 0, 77) + rx(16, CAP_HDR)
    s += gpkt(REQUEST, TO_HOST) + tx() + op(C_RESET) + op(C_GUEST)
    s += op(C_LISTEN, 'BBB', 0, 1, 0) + poll() + op(C_GUEST) + op(C_QUIET) + op(C_ROUND)
    yield 'flood-reset', s


def vsock_hdr(src, dst, sport, dport, length, typ, opc, flags=0, buf_alloc=65536, fwd=0):
    return struct.pack('<QQIIIHHIII', src, dst, sport, dport, length, typ, opc, flags,
                       buf_alloc, fwd)


def pkt(cfg, cid, body, readable=None, reply=(3, 0, 65536, 0)):
    s = struct.pack('<B', cfg) + struct.pack('<Q' if cfg & 4 else '<B', cid)
    if cfg & 2:
        s += struct.pack('<I', readable)
    return s + struct.pack('<BIII', *reply) + body


def vsock_seeds():
    yield 'request', pkt(0, 3, vsock_hdr(3, 2, 1234, 5000, 0, 1, 1))
    yield 'rw-stream', pkt(0, 3, vsock_hdr(3, 2, 1234, 5000, 10, 1, 5) + b'0123456789')
    yield 'rw-seqpacket', pkt(1, 3, vsock_hdr(3, 2, 1, 2, 4, 2, 5, flags=3) + b'abcd')
    yield 'shutdown', pkt(4, 0x1_0000_0003, vsock_hdr(3, 2, 1, 2, 0, 1, 4, flags=3))
    yield 'truncated', pkt(2, 3, vsock_hdr(3, 2, 1, 2, 100, 1, 5) + b'x' * 10, readable=60)
    yield 'short', pkt(0, 3, vsock_hdr(3, 2, 1, 2, 0, 1, 1)[:20])


def main():
    out = sys.argv[1] if len(sys.argv) > 1 else os.path.join(HERE, 'corpus')
    for target, seeds in (('virtq', virtq_seeds()), ('virtq_packed', packed_seeds()),
                          ('vsock_pkt', vsock_seeds()), ('conn', conn_seeds())):
        d = os.path.join(out, target)
        os.makedirs(d, exist_ok=True)
        for name, data in seeds:
            with open(os.path.join(d, 'seed-' + name), 'wb') as f:
                f.write(data)


if __name__ == '__main__':
    main()
