# Partial residuals (R's termplot residuals: martingale plus each term's centred linear
# predictor, predict(type = "terms")) and dfbetas of Cox fits: the oracle of
# tests/engine/inference/test_partial_residuals.py.  Run from the repository root with R 4.2.2
# and survival 3.5-3 (Debian bookworm: apt-get install r-cran-survival):
#   Rscript tests/data/r_partial_residuals.R > tests/data/r_partial_residuals.Rout
# It writes tests/data/r_partial_residuals.csv.gz: case, kind, term, row (1-based), value.
library(survival)
library(splines)
options(digits = 15)
cat(R.version.string, "survival", format(packageVersion("survival")), "\n")
rossi <- read.csv("sample_data/rossi.csv")
rossi$w <- 0.5 + (seq_len(nrow(rossi)) %% 7) / 4
out <- list()
keep <- function(case, fit, kinds) {
  for (kind in kinds) {
    r <- residuals(fit, type = kind)
    if (is.null(colnames(r))) colnames(r) <- names(coef(fit))
    for (term in colnames(r)) {
      out[[length(out) + 1]] <<- data.frame(case = case, kind = kind, term = term,
                                            row = seq_len(nrow(r)), value = unname(r[, term]))
    }
  }
  cat("##", case, "\n"); print(coef(fit), digits = 15); print(fit$means, digits = 15)
}
keep("efron", coxph(Surv(week, arrest) ~ fin + age + prio + race, rossi),
     c("partial", "dfbetas"))
keep("breslow_strata_weights",
     coxph(Surv(week, arrest) ~ fin + age + prio + strata(wexp), rossi, weights = w,
           ties = "breslow"), c("partial", "dfbetas"))
keep("efron_terms", coxph(Surv(week, arrest) ~ fin + ns(age, df = 3) + prio + fin:prio, rossi),
     c("partial"))
write.csv(do.call(rbind, out), gzfile("tests/data/r_partial_residuals.csv.gz"), row.names = FALSE)
