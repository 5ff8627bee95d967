"""Published standard populations for direct age standardisation, and the age group of a row.

Each standard is a list of age groups in completed years, [lower, upper): "40-44" holds ages
40 <= a < 45, the last group ("85+") everything above, with the weight (people per 100,000 or
per 1,000,000 of the standard) the publication prints.  Rates standardised to the same
standard compare across cohorts and papers; a cohort that covers only some ages is weighed by
the groups it has (a truncated standard, the weights summing to 1 over them).

- "who2000": WHO World Standard Population 2000-2025, 21 groups to 100+, per 100,000 (Ahmad OB,
  Boschi-Pinto C, Lopez AD, Murray CJL, Lozano R, Inoue M. Age standardization of rates: a new
  WHO standard. GPE Discussion Paper Series No. 31, World Health Organization, 2001).  The
  printed weights sum to 100,035 (their rounding); they are used as printed.
- "segi1960": Segi's world standard population as modified by Doll, 18 groups to 85+, per
  100,000 (Segi M. Cancer mortality for selected sites in 24 countries, 1950-57. Sendai, 1960;
  Doll R, Payne P, Waterhouse J. Cancer incidence in five continents, vol. I, UICC, 1966): the
  standard of the IARC's Cancer Incidence in Five Continents.
- "esp2013": the European Standard Population 2013, 19 groups to 90+, per 100,000 (Eurostat.
  Revision of the European Standard Population: report of Eurostat's task force, 2013 edition.
  Luxembourg: Publications Office of the European Union, 2013), with its under-1 and 1-4 groups
  together as 0-4 and its 90-94 and 95+ as 90+, as Public Health England's
  PHEindicatormethods weighs them.
- "us2000": the United States 2000 standard population in the 11 groups of the National Center
  for Health Statistics, per 1,000,000 (Anderson RN, Rosenberg HM. Age standardization of death
  rates: implementation of the year 2000 standard. National Vital Statistics Reports 1998;
  47(3)).
"""
from __future__ import annotations

import numpy as np
import pandas as pd

_FIVE_YEARS = list(range(0, 100, 5))

# name: (title, per, lower limits of the groups, weights)
_STANDARDS = {
    "who2000": ("WHO World Standard Population 2000-2025", 100_000, _FIVE_YEARS + [100],
                [8860, 8690, 8600, 8470, 8220, 7930, 7610, 7150, 6590, 6040, 5370, 4550, 3720,
                 2960, 2210, 1520, 910, 440, 150, 40, 5]),
    "segi1960": ("Segi world standard population (1960, Doll's modification)", 100_000,
                 _FIVE_YEARS[:18],
                 [12000, 10000, 9000, 9000, 8000, 8000, 6000, 6000, 6000, 6000, 5000, 4000,
                  4000, 3000, 2000, 1000, 500, 500]),
    "esp2013": ("European Standard Population 2013", 100_000, _FIVE_YEARS[:19],
                [5000, 5500, 5500, 5500, 6000, 6000, 6500, 7000, 7000, 7000, 7000, 6500, 6000,
                 5500, 5000, 4000, 2500, 1500, 1000]),
    "us2000": ("United States 2000 standard population (NCHS, 11 groups)", 1_000_000,
               [0, 1, 5, 15, 25, 35, 45, 55, 65, 75, 85],
               [13818, 55317, 145565, 138646, 135573, 162613, 134834, 87247, 66037, 44842,
                15508]),
}

STANDARD_POPULATIONS = tuple(_STANDARDS)


def standard_population(name: str) -> pd.DataFrame:
    """The age groups of the standard ``name`` (one of STANDARD_POPULATIONS).

    Returns a DataFrame indexed by group label ("0-4", ..., "85+") with ``lower`` and ``upper``
    (ages lower <= a < upper in years; inf for the last group) and ``weight`` (people in that
    group per ``attrs["per"]`` of the standard); ``attrs["title"]`` names the standard.
    """
    if name not in _STANDARDS:
        raise ValueError(f"unknown standard population {name!r}; choose one of "
                         f"{list(STANDARD_POPULATIONS)}, or give weights by stratum.")
    title, per, lower, weights = _STANDARDS[name]
    upper = [*lower[1:], np.inf]
    labels = [f"{lo}+" if hi == np.inf else f"{lo}" if hi - lo == 1 else f"{lo}-{hi - 1}"
              for lo, hi in zip(lower, upper)]
    table = pd.DataFrame({"lower": np.asarray(lower, float), "upper": np.asarray(upper, float),
                          "weight": np.asarray(weights, float)},
                         index=pd.Index(labels, name="age_group"))
    table.attrs.update(title=title, per=per)
    return table


def age_group_codes(ages: np.ndarray, table: pd.DataFrame, what: str) -> np.ndarray:
    """The position in ``table`` (standard_population's) of each age; ``what`` names the ages
    in the error for a missing, infinite or negative one."""
    ages = np.asarray(ages, dtype=float)
    bad = np.flatnonzero(~np.isfinite(ages) | (ages < 0))
    if bad.size:
        raise ValueError(f"{what} must be ages in years (finite, >= 0) to be placed in the "
                         f"{table.attrs['title']}'s age groups; rows {bad[:5].tolist()} hold "
                         f"{ages[bad[:5]].tolist()}. Fix or drop those rows.")
    return np.searchsorted(table["lower"].to_numpy(), ages, side="right") - 1
