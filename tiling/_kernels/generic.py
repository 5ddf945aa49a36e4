"""The generic kernels: any layout the reference accepts (any `minor_to_major`, repeated tiles,
`*`, tiles longer than the rank, `L(n)`, any `E(n)`). Equal `tiling._reference.encode_into` /
`decode_into` for every layout, with the tables `tiling._generic_plans` builds.

`move`: the position of an element on either side is a sum over *groups* of logical dims of a
table lookup (tiles only ever split a dim, so without `*` every physical dim is its own group and
the position is sum_d table_d[i_d]; a `*` merge joins the merged dims into one group indexed
row-major by `radix`). A strided array is the special case table_d[i] = i * stride_d. `move`
copies element i of the index space from the source position to the destination position,
looping over `sizes` (outer to inner) with an odometer. Side arguments: grp[d] group of loop dim
d, rad[d] its radix in that group, toff[g] where group g's table starts in tab, tab the
concatenated tables, run, step: the inner dim's group table is tab[start] + k*step for the k-th
index of each aligned block of `run` indices (run=1 when nothing is known).

`pack_bits` / `unpack_bits`: sub-byte storage (E(1), E(2), E(4)), element k at bit k*bits, LSB
first. `scatter` / `gather`: the permutation kernels, perm[i] the buffer position of element i
of the C-order array, for layouts that move elements in runs of 1-4 (e.g. `(2,1)` on 32-bit
elements): one index load per element beats `move`'s per-run table walk there by 5-6x.
"""

from __future__ import annotations

import numpy as np

from tiling._kernels.jit import _kernel, _u


@_kernel
def move(sizes, src, s_grp, s_rad, s_toff, s_tab, s_run, s_step,
         dst, d_grp, d_rad, d_toff, d_tab, d_run, d_step):
    r = sizes.size
    for d in range(r):
        if sizes[d] == 0:
            return None
    inner = sizes[r - 1]
    s_gin = s_grp[r - 1]
    s_rin = s_rad[r - 1]
    d_gin = d_grp[r - 1]
    d_rin = d_rad[r - 1]
    idx = np.zeros(r, np.int64)
    s_gidx = np.zeros(s_toff.size, np.int64)
    d_gidx = np.zeros(d_toff.size, np.int64)
    rows = 1
    for d in range(r - 1):
        rows *= sizes[d]
    for _ in range(rows):
        s_gidx[:] = 0
        d_gidx[:] = 0
        for d in range(r - 1):
            s_gidx[s_grp[d]] += idx[d] * s_rad[d]
            d_gidx[d_grp[d]] += idx[d] * d_rad[d]
        s_base = 0
        for g in range(s_toff.size):
            if g != s_gin:
                s_base += s_tab[_u(s_toff[g] + s_gidx[g])]
        d_base = 0
        for g in range(d_toff.size):
            if g != d_gin:
                d_base += d_tab[_u(d_toff[g] + d_gidx[g])]
        # The inner dim's table is arithmetic (step) inside aligned blocks of `run` group
        # indices, so it is walked run by run: one table lookup per run, not per element.
        # (run positions are tracked by subtraction: a division per run cost more than the run)
        s_left = s_run - s_gidx[s_gin] % s_run
        d_left = d_run - d_gidx[d_gin] % d_run
        i = 0
        while i < inner:
            n = min(inner - i, s_left, d_left)
            sp = s_base + s_tab[_u(s_toff[s_gin] + s_gidx[s_gin] + i * s_rin)]
            dp = d_base + d_tab[_u(d_toff[d_gin] + d_gidx[d_gin] + i * d_rin)]
            if s_step == 1 and d_step == 1:
                for k in range(n):
                    dst[_u(dp + k)] = src[_u(sp + k)]
            else:
                for k in range(n):
                    dst[_u(dp + k * d_step)] = src[_u(sp + k * s_step)]
            i += n
            s_left -= n
            if s_left == 0:
                s_left = s_run
            d_left -= n
            if d_left == 0:
                d_left = d_run
        d = r - 2
        while d >= 0:
            idx[d] += 1
            if idx[d] < sizes[d]:
                break
            idx[d] = 0
            d -= 1
    return None


@_kernel
def pack_bits(values, bits, out):
    per = 8 // bits
    mask = np.uint8((1 << bits) - 1)
    n = values.size
    full = n // per
    for byte in range(full):
        acc = np.uint8(0)
        for k in range(per):
            acc |= (values[_u(byte * per + k)] & mask) << np.uint8(k * bits)
        out[_u(byte)] = acc
    if full * per < n:
        acc = np.uint8(0)
        for k in range(n - full * per):
            acc |= (values[_u(full * per + k)] & mask) << np.uint8(k * bits)
        out[_u(full)] = acc
    return None


@_kernel
def unpack_bits(buf, bits, values):
    per = 8 // bits
    mask = np.uint8((1 << bits) - 1)
    for e in range(values.size):
        values[_u(e)] = (buf[_u(e // per)] >> np.uint8((e % per) * bits)) & mask
    return None


@_kernel
def scatter(src, perm, dst):
    for i in range(perm.size):
        dst[_u(perm[_u(i)])] = src[_u(i)]
    return None


@_kernel
def gather(buf, perm, dst):
    for i in range(perm.size):
        dst[_u(i)] = buf[_u(perm[_u(i)])]
    return None
