#!/usr/bin/env python3
"""Writes tiny_linear.safetensors: the spec's 2x2 example (spec 10 and 11.3).

One tensor "linear.weight", F16, shape [2, 2], values [[2, 1], [-1, 3]] as [out][in], in the
same byte layout as vtrace::runtime::write_safetensors (compact JSON header padded with spaces
to a multiple of 8, little-endian data). runtime_safetensors_test checks that the writer
reproduces this file byte for byte. Run from this folder: python3 make_tiny_linear.py
"""
import json
import struct

values = [2.0, 1.0, -1.0, 3.0]
data = struct.pack("<4e", *values)
header = json.dumps(
    {"linear.weight": {"dtype": "F16", "shape": [2, 2], "data_offsets": [0, len(data)]}},
    separators=(",", ":"),
)
while (8 + len(header)) % 8:
    header += " "
with open("tiny_linear.safetensors", "wb") as out:
    out.write(struct.pack("<Q", len(header)))
    out.write(header.encode("ascii"))
    out.write(data)
