"""SNP blocks as Dask tasks: a LocalCluster, or a running scheduler (address or Client).

Each task reads, standardises and tests one SNP block against every trait on a worker
(``scan._Problem.__call__``); the problem (eigenvectors, weights) is broadcast to the workers
once per kinship through ``engine.core.parallel.Runner``.  Workers read the .bed themselves, so on a
cluster the fileset must sit at the same path on every machine.  Blocks are submitted a few at
a time (``_IN_FLIGHT`` per worker) so that results never pile up beyond the memory budget.
"""
from __future__ import annotations

from ..core.parallel import Runner

_IN_FLIGHT = 2


class DaskBlocks:
    """``with DaskBlocks(scheduler, n_workers) as run: run(problem, m_block)`` yields
    (start, beta, se, p) per SNP block in order."""

    def __init__(self, scheduler=None, n_workers=2):
        self.scheduler, self.n_workers = scheduler, n_workers
        self._client = self._cluster = None

    def __enter__(self):
        import distributed

        if type(self.scheduler).__name__ == "Client":
            self._client = self.scheduler
        elif self.scheduler is None:
            self._cluster = distributed.LocalCluster(n_workers=self.n_workers,
                                                     threads_per_worker=1, processes=True,
                                                     dashboard_address=":0")
            self._client = distributed.Client(self._cluster)
        else:
            self._client = distributed.Client(self.scheduler)
        return self

    def __exit__(self, *exc):
        if self._client is not self.scheduler:
            self._client.close()
        if self._cluster is not None:
            self._cluster.close()

    def __call__(self, problem, m_block, out=None):
        """Blocks of ``problem`` as tasks (results come back from the workers: ``out`` is not
        used)."""
        items = [(s, s + m_block) for s in range(0, problem.genotypes.m, m_block)]
        chunk = _IN_FLIGHT * max(1, len(self._client.scheduler_info()["workers"]))
        with Runner(problem, parallel=self._client) as runner:
            for i in range(0, len(items), chunk):
                yield from runner.map(items[i:i + chunk])
