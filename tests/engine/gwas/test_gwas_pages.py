"""The scan's output arrays: huge pages only while the kernel has free 2 MB blocks for them."""
import mmap

import numpy as np
import pytest

from engine.gwas import pages

BUDDYINFO = """\
Node 0, zone      DMA      0      0      0      0      0      0      0      0      1      1      3
Node 0, zone   Normal  15255   5524   2564   1680    576    664    316    199    474    362   3640
"""


def test_free_huge_bytes_counts_the_blocks_of_order_nine_and_above(tmp_path):
    path = tmp_path / "buddyinfo"
    path.write_text(BUDDYINFO)
    huge_pages = (1 + 2 * 3) + (362 + 2 * 3640)     # order 9 (2 MB) and 10 (4 MB) blocks
    assert pages.free_huge_bytes(str(path)) == huge_pages * 2**21
    assert pages.free_huge_bytes(str(tmp_path / "missing")) == 0


def owner(a):
    """What holds ``a``'s memory: an mmap for ``paged``'s 4 KB maps."""
    while isinstance(a, np.ndarray) and a.base is not None:
        a = a.base
    return a.obj if isinstance(a, memoryview) else a


@pytest.mark.parametrize("free, numpy_memory", [(2**40, True), (0, False)])
def test_paged_chooses_huge_pages_only_when_they_are_free(monkeypatch, free, numpy_memory):
    monkeypatch.setattr(pages, "free_huge_bytes", lambda: free)
    a = pages.paged((300, 1000), np.int32)
    assert a.shape == (300, 1000) and a.dtype == np.int32 and a.flags.writeable
    assert isinstance(owner(a), mmap.mmap) is not numpy_memory
    a[:] = 7
    assert a.sum() == 7 * 300 * 1000
    np.testing.assert_array_equal(pages.tiled(np.arange(5), 3), np.tile(np.arange(5), 3))
