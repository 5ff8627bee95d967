# Martingale residuals of Cox fits against a covariate with R's lowess smooth (the check of a
# covariate's functional form, Therneau & Grambsch 2000, section 5.2): the oracle of
# tests/engine/inference/test_functional_form.py.  Run from the repository root with R 4.2.2 and
# survival 3.5-3 (Debian bookworm: apt-get install r-cran-survival):
#   Rscript tests/data/r_functional_form.R > tests/data/r_functional_form.Rout
# It writes tests/data/r_functional_form.csv.gz: case, x, smooth (lowess's sorted output).
library(survival)
options(digits = 15)
cat(R.version.string, "survival", format(packageVersion("survival")), "\n")
rossi <- read.csv("sample_data/rossi.csv")
out <- list()
keep <- function(case, x, r, ...) {
  s <- lowess(x, r, ...)
  out[[length(out) + 1]] <<- data.frame(case = case, x = s$x, smooth = s$y)
  cat("##", case, "\n"); print(head(cbind(s$x, s$y)), digits = 15)
}
fit <- coxph(Surv(week, arrest) ~ fin + age + prio, rossi)
r <- resid(fit)
keep("efron_age", rossi$age, r)
keep("efron_prio", rossi$prio, r)
keep("efron_age_f0.3_iter0", rossi$age, r, f = 0.3, iter = 0)
# the covariates full of ties where a smoother may fail: 0/1 (every neighbour of a point the
# same x) and mostly zero
keep("efron_fin", rossi$fin, r)
keep("efron_prio_over_5", pmax(rossi$prio - 5, 0), r)
# a covariate not in the model: is it worth adding, and in what form?
keep("efron_null_age", rossi$age,
     resid(coxph(Surv(week, arrest) ~ 1, rossi)))
fit <- coxph(Surv(week, arrest) ~ fin + prio + strata(wexp), rossi, ties = "breslow")
keep("breslow_strata_age", rossi$age, resid(fit))
keep("breslow_strata_null_age", rossi$age,
     resid(coxph(Surv(week, arrest) ~ strata(wexp), rossi, ties = "breslow")))
write.csv(do.call(rbind, out), gzfile("tests/data/r_functional_form.csv.gz"), row.names = FALSE)
