"""The multiply-high divider of batchnorm/train.cuh (FastDiv) in Python, the same integer steps as its C++: exact
for every divisor and numerator below 2^31 it is used with (checked on samples here; the GPU tests run it)."""
import random

import pytest


def make(d):
    s = 0
    while (1 << s) < d:
        s += 1
    m = ((1 << 32) * ((1 << s) - d)) // d + 1
    assert m < (1 << 32) or d == 1 and m == 1
    return m & 0xFFFFFFFF, s


def divide(n, m, s):
    return (((n * m) >> 32) + n) >> s


@pytest.mark.parametrize("d", [1, 2, 3, 5, 7, 16, 17, 63, 289, 1000, 4095, 65537, (1 << 20) + 3, (1 << 30) + 1,
                               (1 << 31) - 1])
def test_fast_division_is_exact(d):
    m, s = make(d)
    rng = random.Random(d)
    numerators = list(range(0, 5000)) + [rng.randrange(0, 1 << 31) for _ in range(20000)] + \
        [k * d + r for k in (1, 2, 1000) for r in (-1, 0, 1) if 0 <= k * d + r < (1 << 31)] + [(1 << 31) - 1]
    for n in numerators:
        assert divide(n, m, s) == n // d, (n, d)
