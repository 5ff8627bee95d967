"""Traits with missing values: each trait is analysed on the individuals who have it, as
FaST-LMM ``single_snp`` does when called for that trait alone (it drops the individuals whose
phenotype is missing, then standardises the SNPs, builds the kinship and estimates h2 on the
rest).  Traits that share a missingness pattern share one scan (one kinship and
eigendecomposition per pattern); ``combine`` joins the per-pattern results in trait order.
"""
from __future__ import annotations

import numpy as np
import pandas as pd

from ..core.errors import CohortError
from .output import ordered


def patterns(traits: pd.DataFrame) -> list[tuple[list, pd.Index]]:
    """[(trait columns, individuals with those traits)] per missingness pattern, in the order
    of each pattern's first trait; CohortError for a trait with no value at all."""
    observed = traits.notna().to_numpy()
    empty = list(traits.columns[~observed.any(axis=0)])
    if empty:
        raise CohortError(f"pheno: trait(s) {empty[:5]} have no value; drop those columns.")
    groups: dict[bytes, list] = {}              # trait positions by packed pattern
    for j, key in enumerate(np.packbits(observed, axis=0).T):
        groups.setdefault(key.tobytes(), []).append(j)
    return [(list(traits.columns[js]), traits.index[observed[:, js[0]]])
            for js in groups.values()]


def combine(results, names) -> dict:
    """The fields of one GwasResult from the per-pattern results (each in memory), traits in
    ``names`` order."""
    def stacked(attribute):
        return pd.concat([getattr(r, attribute) for r in results]).loc[names]

    h2, sigma2, summary = stacked("h2"), stacked("sigma2"), stacked("summary")
    frame = ordered(pd.concat([r.frame for r in results], ignore_index=True), names)
    top = pd.concat([r.top_hits for r in results], ignore_index=True) \
        .sort_values(["Pheno", "PValue"], kind="stable").reset_index(drop=True)
    individuals = pd.concat([r.individuals.to_frame(index=False) for r in results]) \
        .drop_duplicates()
    spec = {**results[0].spec, "t": len(names),
            "n": int(max(r.spec["n"] for r in results)), "patterns": len(results)}
    timings = {k: float(np.sum([r.timings[k] for r in results])) for k in results[0].timings}
    return dict(h2=h2, sigma2=sigma2, summary=summary, top_hits=top,
                individuals=pd.MultiIndex.from_frame(individuals), output=None,
                timings=timings, spec=spec, _frame=frame)
