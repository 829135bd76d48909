#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# tests/fuzz/make_graph_seeds.py: writes the hand-made seeds of the graph target into
# corpus/graph/ (one program per step kind, on each backend). The fuzzer grows the corpus from
# them; scripts/fuzz.sh --merge keeps the inputs that add coverage.
import os
import random

STEPS = [
    "PARAMETER", "CONSTANT", "SCALAR", "UNARY", "BINARY", "COMPARE", "REDUCE", "CONVERT",
    "BITCAST", "CLAMP", "WHERE", "RESHAPE", "TRANSPOSE", "BROADCAST", "CONCAT", "SLICE",
    "REVERSE", "IOTA", "PAD", "DYNAMIC_SLICE", "DYNAMIC_UPDATE_SLICE", "GATHER", "SCATTER",
    "CONV", "REDUCE_WINDOW", "SELECT_AND_SCATTER", "DOT_GENERAL", "DOT", "ARG_MIN_MAX", "RNG",
    "FFT", "BATCH_NORM", "BARRIER", "OPEN_CLOSURE", "CLOSE", "NEW_FUNCTION", "CALL",
    "WHILE_TEMPLATE", "IF_TEMPLATE", "SORT_TEMPLATE", "RAW_CONTROL"]
OP = {name: i for i, name in enumerate(STEPS)}
# Parameter f32[3, 4] named by default: opcode, shape-or-like (<100: fresh), dtype F32, rank 2,
# dims 1 + 2 % 5 = 3 and 1 + 3 % 5 = 4, name byte (< 128: automatic).
PARAM_F32_3x4 = [OP["PARAMETER"], 0, 0, 2, 2, 3, 0]
# Parameter i32[5] (dtype index 2 in the common list).
PARAM_I32_5 = [OP["PARAMETER"], 0, 2, 1, 4, 0]

# Steps of the newer API: opcode bytes EXTENDED_FIRST + index (fuzz_graph.c, fz_step_extended).
EXTENDED_FIRST = 224
EXTENDED = [
    "SPMD", "AUTO_SHARDING", "SHARDED_PARAMETER", "ALL_REDUCE", "ALL_GATHER", "REDUCE_SCATTER",
    "ALL_TO_ALL", "COLLECTIVE_PERMUTE", "COLLECTIVE_BROADCAST", "IDS", "QUANT_DENSE",
    "QUANT_EMBEDDING", "GRADIENTS", "STOP_GRADIENT"]
FX = {name: EXTENDED_FIRST + i for i, name in enumerate(EXTENDED)}
# SPMD on 2 device slots (backend 2, "c:...,devices=2", has two devices).
SPMD_2 = [FX["SPMD"], 1]
# AutoSharding on a mesh {x: 2}: one axis named "x" (index 0) of size 2 (index 1), named "mesh".
AUTO_X2 = [FX["AUTO_SHARDING"], 1, 0, 1, 0, 1]
# Operand bytes after the opcode that make each step well-formed (fuzz_graph.c's decoding; a
# pick byte of 1 is the f32[3, 4] parameter, 0 the newest value).
WELL_FORMED = {
    # A fresh f32[2, 4] (dtype 0, rank 2, dims 1 + 1 and 1 + 3), mesh 0, a spec made from names,
    # axis 0 split by "x" (1), axis 1 replicated (0), on main.
    "SHARDED_PARAMETER": [0, 0, 2, 1, 3, 0, 100, 0, 1, 0, 0],
    "ALL_REDUCE": [0, 1, 0, 0],             # one operand: f32[3, 4], sum, every slot
    "ALL_GATHER": [1, 1, 0],                # f32[3, 4] along axis 1
    "REDUCE_SCATTER": [1, 0, 1, 0],         # f32[3, 4], sum, axis 1 (4 = 2 x 2)
    "ALL_TO_ALL": [1, 1, 0, 0],             # f32[3, 4]: split axis 1, concat axis 0
    "COLLECTIVE_PERMUTE": [1, 1, 0, 1],     # 0 -> 1
    "COLLECTIVE_BROADCAST": [1, 0],
    "IDS": [1],
    # Linear, block size 2, Int8 weights [3, 2] with a zero point, x f32[2, 3], GELU.
    "QUANT_DENSE": [0, 0, 1, 0, 0, 1, 1, 2, 0, 1, 0, 1],
    # GGML Q8_0 table [3 rows, K 32], Int32 indices [2, 1].
    "QUANT_EMBEDDING": [2, 1, 0, 0, 0, 0, 2, 0, 0, 0, 1, 1],
    # loss: the sum of f32[3, 4]; d loss / d f32[3, 4].
    "GRADIENTS": [1, 0, 1, 2],
    "STOP_GRADIENT": [1],
}
# A few longer programs: GGML Q4_K and NF4 dense layers; a gradient through a quantized dense.
EXTRA = {
    "quant_dense_q4_k": [0] + PARAM_F32_3x4 + [FX["QUANT_DENSE"], 2, 5, 0, 0, 0, 1, 2, 0, 0, 0, 3],
    "quant_dense_nf4": [0] + PARAM_F32_3x4 + [FX["QUANT_DENSE"], 1, 0, 4, 0, 0, 2, 3, 4, 2, 200,
                                              1, 2],
    "quant_dense_grad": [0] + PARAM_F32_3x4 + [FX["QUANT_DENSE"], 0, 0, 0, 0, 0, 1, 1, 3, 0, 0,
                                               0, 0, FX["GRADIENTS"], 0, 0, 1, 3],
    "spmd_all_reduce_grad": [2] + SPMD_2 + PARAM_F32_3x4 + [FX["ALL_REDUCE"], 0, 0, 0, 0,
                                                            FX["GRADIENTS"], 0, 0, 1, 1],
}


def main():
    here = os.path.dirname(os.path.abspath(__file__))
    out = os.path.join(here, "corpus", "graph")
    os.makedirs(out, exist_ok=True)
    rng = random.Random(20240611)
    for backend in range(4):
        for name, op in OP.items():
            if backend != 0 and op % 4 != backend:
                continue  # one program per step on backend 0, a quarter of them elsewhere
            tail = bytes(rng.randrange(0, 200) for _ in range(48))
            program = bytes([backend] + PARAM_F32_3x4 + PARAM_I32_5 + [op]) + tail
            with open(os.path.join(out, "seed_%d_%s" % (backend, name.lower())), "wb") as f:
                f.write(program)
    # The newer API: each step on one device, and under SPMD / AutoSharding on two slots of
    # backend 2: once with operand bytes that make a well-formed op followed by zeros (an empty
    # stream reads as zeros: main returns the newest value, and the program runs), once with a
    # random tail.
    for name, op in FX.items():
        for prefix, tag in (([0], "1"), ([2] + SPMD_2, "spmd"), ([2] + AUTO_X2, "auto")):
            head = bytes(prefix + PARAM_F32_3x4 + PARAM_I32_5 + [op])
            programs = [head + bytes(WELL_FORMED.get(name, [])) + bytes(16),
                        head + bytes(rng.randrange(0, 160) for _ in range(64))]
            for variant, program in enumerate(programs):
                path = os.path.join(out, "seed_x_%s_%s_%d" % (name.lower(), tag, variant))
                with open(path, "wb") as f:
                    f.write(program)
    for name, program in EXTRA.items():
        with open(os.path.join(out, "seed_x_%s" % name), "wb") as f:
            f.write(bytes(program) + bytes(16))

if __name__ == "__main__":
    main()
