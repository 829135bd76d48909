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


if __name__ == "__main__":
    main()
