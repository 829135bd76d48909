#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# scripts/gen_quant_fixtures.py: writes the quantization oracle fixtures of tests/data/quant/
# with the gguf package (llama.cpp's gguf-py: `pip install gguf numpy`) and numpy.
#
# One file per GGML format, <FORMAT>.bin, little-endian:
#   "CMLQ", u32 version (1), u32 cml_ggml_type_t value, u32 rows, u32 k, u32 has_src,
#   [f32 src[rows * k]  when has_src: the floats gguf.quants.quantize was given]
#   u8  blocks[rows * row_bytes]   (gguf.quants.quantize(src) when has_src, else random blocks
#                                   with sane fp16 scales, as gguf cannot quantize that format)
#   f32 deq[rows * k]              (gguf.quants.dequantize(blocks))
# and linear.bin for the Linear and NF4 schemes (numpy):
#   "CMLL", u32 version (1), u32 case count, then per case:
#   u32 scheme (0 Linear, 1 NF4), u32 cml_dtype_t, u32 k, u32 n, u32 block, u32 has_zero,
#   i32 codes[k * n] (the stored integers), f32 scale[k * nb], [f32 zero[k * nb]],
#   f32 w[k * n] (numpy's dequantization: q * s + z, or NF4[q & 15] * s).
# Run from the repository root (after `pip install -r scripts/requirements-quant.txt`):
#   python3 scripts/gen_quant_fixtures.py [out_dir]
import os
import struct
import sys

import numpy as np
from gguf import GGMLQuantizationType as T
from gguf import quants

# cml_ggml_type_t values (GoMLX's numbering, then Q4_1, Q5_0, Q5_1).
FORMATS = [
    ("Q4_0", 0, T.Q4_0, True), ("Q8_0", 1, T.Q8_0, True), ("IQ4_NL", 2, T.IQ4_NL, False),
    ("Q2_K", 3, T.Q2_K, False), ("Q3_K", 4, T.Q3_K, False), ("Q4_K", 5, T.Q4_K, False),
    ("Q5_K", 6, T.Q5_K, False), ("Q6_K", 7, T.Q6_K, False), ("Q4_1", 8, T.Q4_1, True),
    ("Q5_0", 9, T.Q5_0, True), ("Q5_1", 10, T.Q5_1, True),
]
# Offsets of the fp16 fields of each block (d, and dmin / m where the format has one).
HALF_FIELDS = {
    T.IQ4_NL: [0], T.Q2_K: [80, 82], T.Q3_K: [108], T.Q4_K: [0, 2], T.Q5_K: [0, 2], T.Q6_K: [208],
}
ROWS, K = 9, 256

NF4 = np.array([-1.0, -0.6961928009986877, -0.5250730514526367, -0.39491748809814453,
                -0.28444138169288635, -0.18477343022823334, -0.09105003625154495, 0.0,
                0.07958029955625534, 0.16093020141124725, 0.24611230194568634,
                0.33791524171829224, 0.44070982933044434, 0.5626170039176941,
                0.7229568362236023, 1.0], dtype=np.float32)
# cml_dtype_t values.
DT = {"I8": 2, "U8": 6, "I4": 21, "U4": 22, "I2": 24, "U2": 25}
RANGES = {"I8": (-128, 127), "U8": (0, 255), "I4": (-8, 7), "U4": (0, 15), "I2": (-2, 1),
          "U2": (0, 3)}


def ggml_file(rng, name, type_id, qtype, has_src):
    bpb, vpb = quants.GGML_QUANT_SIZES[qtype][1], quants.GGML_QUANT_SIZES[qtype][0]
    row_bytes = K // vpb * bpb
    src = None
    if has_src:
        src = rng.standard_normal((ROWS, K)).astype(np.float32)
        src[1, :32] = 0                                    # an all-zero block
        src[2] = np.round(src[2] * 4) / 4                  # quarter-rounded values (ties)
        src[3] *= 1e-3                                     # small values (fp16 subnormal scales)
        src[4, 5] = 40.0                                   # one outlier
        blocks = quants.quantize(src, qtype)
    else:
        blocks = rng.integers(0, 256, size=(ROWS, row_bytes), dtype=np.uint8)
        for b in range(K // vpb):
            for off in HALF_FIELDS[qtype]:
                h = rng.uniform(0.002, 0.05, size=ROWS).astype(np.float16)
                blocks[:, b * bpb + off:b * bpb + off + 2] = h.view(np.uint8).reshape(ROWS, 2)
    assert blocks.shape == (ROWS, row_bytes)
    deq = quants.dequantize(blocks, qtype).astype(np.float32)
    assert deq.shape == (ROWS, K)
    out = bytearray(b"CMLQ" + struct.pack("<5I", 1, type_id, ROWS, K, 1 if has_src else 0))
    if has_src:
        out += src.astype("<f4").tobytes()
    out += blocks.tobytes() + deq.astype("<f4").tobytes()
    return bytes(out)


def linear_file(rng):
    cases = []
    for scheme in (0, 1):
        for dt in ("I8", "U8", "I4", "U4", "I2", "U2"):
            if scheme == 1 and dt in ("I2", "U2"):
                continue
            for (k, n, block, zero) in ((13, 11, 4, False), (5, 7, 7, scheme == 0)):
                lo, hi = RANGES[dt]
                codes = rng.integers(lo, hi + 1, size=(k, n)).astype(np.int32)
                nb = -(-n // block)
                scale = rng.uniform(0.01, 0.2, size=(k, nb)).astype(np.float32)
                zp = rng.uniform(-0.5, 0.5, size=(k, nb)).astype(np.float32) if zero else None
                se = np.repeat(scale, block, axis=1)[:, :n]
                if scheme == 1:
                    w = NF4[codes & 15] * se
                else:
                    w = codes.astype(np.float32) * se
                    if zero:
                        w = w + np.repeat(zp, block, axis=1)[:, :n]
                c = struct.pack("<6I", scheme, DT[dt], k, n, block, 1 if zero else 0)
                c += codes.astype("<i4").tobytes() + scale.astype("<f4").tobytes()
                if zero:
                    c += zp.astype("<f4").tobytes()
                c += w.astype("<f4").tobytes()
                cases.append(c)
    return b"CMLL" + struct.pack("<2I", 1, len(cases)) + b"".join(cases)


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else os.path.join("tests", "data", "quant")
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(20260803)
    for name, type_id, qtype, has_src in FORMATS:
        with open(os.path.join(out_dir, name + ".bin"), "wb") as fh:
            fh.write(ggml_file(rng, name, type_id, qtype, has_src))
    with open(os.path.join(out_dir, "linear.bin"), "wb") as fh:
        fh.write(linear_file(rng))
    print("gen_quant_fixtures: wrote", out_dir)


if __name__ == "__main__":
    main()
