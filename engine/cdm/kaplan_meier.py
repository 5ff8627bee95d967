"""Kaplan-Meier survival by treatment arm, as a table a plot can draw: all persons, the matched
population (CohortMethod's variable-ratio adjustment) or a weighted one."""
from __future__ import annotations

import warnings

import numpy as np
import pandas as pd

from ..core.errors import DataWarning
from ..data.cohort import Cohort
from ..descriptive.kaplan_meier import kaplan_meier


def kaplan_meier_by_arm(population: pd.DataFrame, weights=None, cluster=None,
                        arms=("target", "comparator")) -> pd.DataFrame:
    """arm, time, survival, std_err, lower, upper (95%, log-log), at_risk, events, censored:
    a row at time 0 and one per distinct time of each arm (``population``: treatment, time,
    event).

    weights : None (each person once, Greenwood's variance), or one case weight per person:
        ``engine.comparative.matched_weights`` (a comparator of a 1:m set counts 1/m, so that
        sets with fewer comparators weigh as much as full ones: CohortMethod's adjusted curve)
        or inverse-probability weights; the band then takes R's robust (infinitesimal
        jackknife) variance, clustered by ``cluster`` (the matched set: its persons are not
        independent) or else by person.
    """
    z = population["treatment"].to_numpy()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", DataWarning)
        cohort = Cohort.from_arrays(time=population["time"], event=population["event"],
                                    X=z[:, None].astype(np.float64), names=["treatment"],
                                    weights=None if weights is None else np.asarray(weights))
    km = kaplan_meier(cohort, by=np.where(z == 1, arms[0], arms[1]),
                      cluster=None if cluster is None else np.asarray(cluster))
    table = km.table.rename(columns={"group": "arm"})
    origin = (table.groupby("arm", sort=False)["at_risk"].first().rename("at_risk")
              .reset_index().assign(time=0.0, survival=1.0, std_err=0.0, lower=1.0,
                                    upper=1.0, events=0, censored=0))
    columns = ["arm", "time", "survival", "std_err", "lower", "upper", "at_risk", "events",
               "censored"]
    out = pd.concat([origin[columns], table[columns]], ignore_index=True)
    order = pd.Categorical(out["arm"], [a for a in arms if a in set(out["arm"])])
    return out.iloc[np.lexsort((out["time"].to_numpy(), order.codes))].reset_index(drop=True)
