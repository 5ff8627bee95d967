"""TestResult: what every hypothesis test of the engine returns, as lifelines'
StatisticalResult: the statistic, its degrees of freedom and p-value, a table of the details and
the spec of what was tested.  The log-rank test adds its own parts in a subclass
(engine.LogrankResult)."""
from __future__ import annotations

from dataclasses import dataclass

import pandas as pd


@dataclass
class TestResult:
    """One test.

    statistic, df, p : the chi-square statistic (unless the spec says otherwise), its degrees
        of freedom (an integer) and p-value; NaN where the verb tests several hypotheses at
        once (each a row of ``table``)
    table : DataFrame, the details as R prints them (by group, by term, by cause, by test)
    spec : dict, what was tested
    """

    __test__ = False      # not a pytest test class, whatever its name

    statistic: float
    df: float
    p: float
    table: pd.DataFrame
    spec: dict
