#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# scripts/gen_f8_fixtures.py: writes the float8/float4 conversion oracle fixtures of
# tests/data/f8/ with ml_dtypes (the reference implementation JAX uses) and numpy
# (`pip install ml_dtypes numpy`; made with ml_dtypes 0.7.0).
#
# One text file per type, <cml dtype name>.txt, one record a line, hexadecimal:
#   d CODE F32BITS   decoding: the bit pattern CODE (every 8-bit pattern, or the 16 of float4)
#                    is the float32 F32BITS (NaNs written as 7fc00000, sign kept: ffc00000)
#   e F32BITS CODE   encoding: float32 F32BITS converts (round to nearest even, ml_dtypes'
#                    overflow/NaN rules) to CODE
# The encoded inputs are every finite value of the type, the midpoints between neighbours
# (ties) and the floats just around them, values past the largest finite, float32 subnormals,
# zeros, infinities, NaNs and a few hundred random floats of assorted magnitudes.
# Run from the repository root: python3 scripts/gen_f8_fixtures.py [out_dir]
import os
import sys

import ml_dtypes
import numpy as np

TYPES = [
    ("F8E4M3FN", ml_dtypes.float8_e4m3fn, 8),
    ("F8E5M2", ml_dtypes.float8_e5m2, 8),
    ("F8E4M3", ml_dtypes.float8_e4m3, 8),
    ("F8E3M4", ml_dtypes.float8_e3m4, 8),
    ("F8E4M3FNUZ", ml_dtypes.float8_e4m3fnuz, 8),
    ("F8E5M2FNUZ", ml_dtypes.float8_e5m2fnuz, 8),
    ("F8E4M3B11FNUZ", ml_dtypes.float8_e4m3b11fnuz, 8),
    ("F8E8M0FNU", ml_dtypes.float8_e8m0fnu, 8),
    ("F4E2M1FN", ml_dtypes.float4_e2m1fn, 4),
]


def f32_bits(x):
    return int(np.array([x], dtype=np.float32).view(np.uint32)[0])


def decode(t, code):
    return np.array([code], dtype=np.uint8).view(t).astype(np.float32)[0]


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "tests/data/f8"
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(12)
    for name, t, bits in TYPES:
        lines = []
        finite = []
        for code in range(1 << bits):
            v = decode(t, code)
            b = f32_bits(v)
            if np.isnan(v):
                b = 0xFFC00000 if (b >> 31) else 0x7FC00000
            else:
                finite.append(float(v))
            lines.append("d %02x %08x" % (code, b))
        pos = sorted(set(abs(v) for v in finite))
        inputs = set()
        for v in pos:
            inputs.add(v)
        for a, b in zip(pos, pos[1:]):
            mid = np.float32((a + b) / 2)
            inputs.update([float(mid), float(np.nextafter(mid, np.float32(0))),
                           float(np.nextafter(mid, np.float32(np.inf)))])
        big = pos[-1]
        for k in [1.0625, 1.125, 1.5, 2.0, 4.0, 1e3]:
            inputs.add(float(np.float32(big * k)))
        tiny = [x for x in pos if x > 0][0]
        for k in [0.25, 0.5, 0.75, 1.0 / 3]:
            inputs.add(float(np.float32(tiny * k)))
        inputs.update([1e-45, 1.17549435e-38, 5e-39, 3.4028235e38, 1e-10, 1e10])
        for s in [1e-6, 1e-2, 1.0, 10.0, 1e3, 1e5]:
            inputs.update(float(x) for x in rng.standard_normal(40).astype(np.float32) * s)
        vals = sorted(inputs)
        vals = [np.float32(v) for v in vals] + [np.float32(-v) for v in vals]
        vals += [np.float32(0.0), np.float32(-0.0), np.float32(np.inf), np.float32(-np.inf),
                 np.float32(np.nan), -np.float32(np.nan)]
        seen = set()
        for v in vals:
            b = f32_bits(v)
            if b in seen:
                continue
            seen.add(b)
            code = int(np.array([v], dtype=np.float32).astype(t).view(np.uint8)[0])
            lines.append("e %08x %02x" % (b, code))
        with open(os.path.join(out_dir, name + ".txt"), "w") as f:
            f.write("# %s: made by scripts/gen_f8_fixtures.py with ml_dtypes %s\n" %
                    (name, ml_dtypes.__version__))
            f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
