"""Small datasets of R's survival package (Therneau; LGPL >= 2, see sample_data's
LICENSE_survival_r_LGPL-2.txt), typed in for the tests that compare with R's saved output."""
import io

import pandas as pd

# aml: acute myelogenous leukaemia, maintenance chemotherapy or not (Miller 1981)
AML = pd.DataFrame({
    "time": [9, 13, 13, 18, 23, 28, 31, 34, 45, 48, 161, 5, 5, 8, 8, 12, 16, 23, 27, 30, 33, 43,
             45],
    "status": [1, 1, 0, 1, 1, 0, 1, 1, 0, 1, 0, 1, 1, 1, 1, 1, 0, 1, 1, 1, 1, 1, 1],
    "x": ["Maintained"] * 11 + ["Nonmaintained"] * 12})

# ovarian: ovarian cancer survival (Edmonson et al. 1979); dots in names as underscores
OVARIAN = pd.read_csv(io.StringIO("""futime,fustat,age,resid_ds,rx,ecog_ps
59,1,72.3315,2,1,1
115,1,74.4932,2,1,1
156,1,66.4658,2,1,2
421,0,53.3644,2,2,1
431,1,50.3397,2,1,1
448,0,56.4301,1,1,2
464,1,56.9370,2,2,2
475,1,59.8548,2,2,2
477,0,64.1753,2,1,1
563,1,55.1781,1,2,2
638,1,56.7562,1,1,2
744,0,50.1096,1,2,1
769,0,59.6301,2,2,2
770,0,57.0521,2,2,1
803,0,39.2712,1,1,1
855,0,43.1233,1,1,2
1040,0,38.8932,2,1,2
1106,0,44.6000,1,1,1
1129,0,53.9068,1,2,1
1206,0,44.2055,2,2,1
1227,0,59.5890,1,2,2
268,1,74.5041,2,1,2
329,1,43.1370,2,1,1
353,1,63.2192,1,2,2
365,1,64.4247,2,2,1
377,0,58.3096,1,2,1
"""))
