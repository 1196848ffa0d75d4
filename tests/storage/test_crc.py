"""kt.storage's CRC-32C (crc32c-rs, which picks a kernel for the CPU at run time) against
the check value of the standard and an independent implementation (the crc32c package)."""

from __future__ import annotations

import os

import crc32c
import pytest
from crc32c_rs import crc32c as kt_crc32c


def test_the_check_value_of_crc32c():
    assert kt_crc32c(b"123456789") == 0xE3069283
    assert kt_crc32c(b"6789", kt_crc32c(b"12345")) == 0xE3069283  # continued


@pytest.mark.parametrize("size", [0, 1, 7, 15, 16, 63, 64, 255, 256, 1023, 4096, 65308, 1 << 20])
def test_it_agrees_with_an_independent_implementation(size):
    data = os.urandom(size + 3)
    for view in (data[:size], memoryview(data)[3:], bytearray(data[:size])):
        assert kt_crc32c(view) == crc32c.crc32c(view)
        assert kt_crc32c(view, 0x1234) == crc32c.crc32c(view, 0x1234)
