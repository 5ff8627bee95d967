"""The launch of the GPU's fused z step (``latent_pass`` of cuda/horseshoe_probit.cu).

The kernel is a persistent grid: BLOCKS_PER_SM blocks on each multiprocessor, each taking tiles
of ``rows`` rows of X in turn, its thread t holding columns t, t + threads, ... (``cols`` of
them) of the tile's rows in registers. X is read once per iteration, so the kernel is
memory-bound when enough rows are in flight: about rows x BLOCKS_PER_SM per multiprocessor,
within its 64K registers (the cap ``registers`` lets BLOCKS_PER_SM blocks fit), and the next
tile's rows on their way to L2 (``prefetch``) while a tile's z are drawn. The defaults are the
tuning knobs; bench/bayes_latent.py times other settings on a device.
"""
from dataclasses import dataclass

THREADS = 256                  # threads a block at most
HELD_BYTES = 176               # bytes of X a thread holds per tile (rows x cols elements)
ROWS = 16                      # rows a tile at most
BLOCKS_PER_SM = 2              # resident blocks a multiprocessor


@dataclass(frozen=True)
class LatentLaunch:
    """threads a block, columns a thread, rows a tile, blocks a multiprocessor; prefetch: each
    tile first asks L2 for the block's next tile."""

    threads: int
    cols: int
    rows: int
    blocks_per_sm: int = BLOCKS_PER_SM
    prefetch: bool = True

    @classmethod
    def for_columns(cls, p, itemsize, threads=THREADS, rows=ROWS, held_bytes=HELD_BYTES,
                    blocks_per_sm=BLOCKS_PER_SM):
        """The launch for p columns of ``itemsize`` bytes: a multiple of 32 threads covering p
        in ``cols`` columns each, rows a tile so that a thread holds at most held_bytes (one
        row at least)."""
        threads = min(threads, 32 * -(-p // 32))
        cols = -(-p // threads)
        return cls(threads, cols, max(1, min(rows, held_bytes // (cols * itemsize))),
                   blocks_per_sm)

    @property
    def registers(self):
        """The register cap that lets blocks_per_sm blocks share a multiprocessor's 64K."""
        return min(255, 65536 // (self.threads * self.blocks_per_sm)) // 8 * 8

    def options(self):
        """The kernel source's -D options and the register cap (NVRTC's and nvcc's)."""
        return (f"-DLATENT_THREADS={self.threads}", f"-DLATENT_COLS={self.cols}",
                f"-DLATENT_ROWS={self.rows}", f"-DLATENT_PREFETCH={int(self.prefetch)}",
                f"--maxrregcount={self.registers}")

    def grid(self, cupy, n):
        """Blocks of the persistent grid on the current device, at most one a tile."""
        sms = cupy.cuda.runtime.getDeviceProperties(0)["multiProcessorCount"]
        return max(1, min(self.blocks_per_sm * sms, -(-n // self.rows)))
