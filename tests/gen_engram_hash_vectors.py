#!/usr/bin/env python3
# SPDX-License-Identifier: Apache-2.0
# gen_engram_hash_vectors.py: writes tests/engram_hash_vectors.h: the V4.1 Engram rows of a short
# request (image tokens, pad-like ids) computed here independently of eht: primes by trial division,
# multipliers from numpy's default_rng, the n-gram hash with Python integers, shifted sequences padded
# the way the model's reference does it. Needs numpy (python3-numpy).
import numpy as np

LAYERS, MAXN, HEADS, VOCAB, CVOCAB, PAD = [1, 14], 4, 8, 16000000, 99092, 2


def is_prime(n):
    if n < 2:
        return False
    d = 2
    while d * d <= n:
        if n % d == 0:
            return False
        d += 1
    return True


seen, mods = set(), {}
for L in LAYERS:
    mods[L] = []
    for n in range(2, MAXN + 1):
        start = VOCAB - 1
        for _ in range(HEADS):
            c = start + 1
            while not is_prime(c) or c in seen:
                c += 1
            seen.add(c)
            mods[L].append(c)
            start = c
half = (2**63 - 1) // CVOCAB // 2
mult = {L: [2 * int(x) + 1 for x in np.random.default_rng(10007 * L).integers(0, half, MAXN)] for L in LAYERS}

rng = np.random.default_rng(2024)
T = 40
tokens = [int(x) for x in rng.integers(0, CVOCAB, T)]
tokens[5] = 2  # a real token whose compressed id equals pad
image = [0] * T
for i in (9, 10, 23, 39):
    image[i] = 1

rows = []
for p in range(T):
    out = []
    for L in LAYERS:
        # shifted copies: x_s[p] = token p-s, or pad before the start; an image token blocks it and
        # every older position (the model masks the n-gram from the image on)
        R, blocked = 0, False
        for s in range(MAXN):
            q = p - s
            blocked = blocked or q < 0 or image[q] == 1
            v = PAD if blocked else tokens[q]
            R ^= v * mult[L][s]
            if s >= 1:
                for h in range(HEADS):
                    c = (s - 1) * HEADS + h
                    out.append(R % mods[L][c] + sum(mods[L][:c]))
    rows.append(out)

with open("tests/engram_hash_vectors.h", "w") as f:
    f.write("/* SPDX-License-Identifier: Apache-2.0 */\n")
    f.write("/* engram_hash_vectors.h: V4.1 rows of one %d-token request, generated independently by\n"
            " * tests/gen_engram_hash_vectors.py. */\n" % T)
    f.write("static const int hv_tokens[%d] = {%s};\n" % (T, ", ".join(map(str, tokens))))
    f.write("static const unsigned char hv_image[%d] = {%s};\n" % (T, ", ".join(map(str, image))))
    f.write("static const int hv_rows[%d][48] = {\n" % T)
    for r in rows:
        f.write("\t{%s},\n" % ", ".join(map(str, r)))
    f.write("};\n")
print("ok", mods[1][0], mods[14][-1], mult[1][0])
