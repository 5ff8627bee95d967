# Each term's part of the linear predictor with its standard error, R's
# predict(fit, newdata, type = "terms", se.fit = TRUE) (what termplot draws): the oracle of
# tests/engine/regression/test_predict_terms.py.  Run from the repository root with R 4.2.2 and
# survival 3.5-3 (Debian bookworm: apt-get install r-cran-survival):
#   Rscript tests/data/r_predict_terms.R > tests/data/r_predict_terms.Rout
# It writes tests/data/r_predict_terms.csv: case, row (1-based; the fitted rows, or the grid's),
# term, fit, se; and tests/data/r_termplot.csv: termplot(fit, se = TRUE, plot = FALSE)'s
# curves (term, x, y, se; the oracle of engine.term_plot).
library(survival)
library(splines)
options(digits = 15)
cat(R.version.string, "survival", format(packageVersion("survival")), "\n")
rossi <- read.csv("sample_data/rossi.csv")
rossi$w <- 0.5 + (seq_len(nrow(rossi)) %% 7) / 4
grid <- expand.grid(age = c(18, 21.5, 25, 30, 37.25, 44), fin = c(0, 1), prio = c(0, 3, 11))
grid$wexp <- rep(c(0, 1), length.out = nrow(grid))
out <- list()
keep <- function(case, fit, newdata = NULL) {
  p <- if (is.null(newdata)) predict(fit, type = "terms", se.fit = TRUE)
       else predict(fit, newdata, type = "terms", se.fit = TRUE)
  for (term in colnames(p$fit)) {
    out[[length(out) + 1]] <<- data.frame(case = case, row = seq_len(nrow(p$fit)), term = term,
                                          fit = unname(p$fit[, term]),
                                          se = unname(p$se.fit[, term]))
  }
  cat("##", case, "\n"); print(coef(fit), digits = 15)
}
terms_fit <- coxph(Surv(week, arrest) ~ fin + ns(age, df = 3) + prio + fin:prio, rossi)
keep("terms_fitted", terms_fit)
keep("terms_grid", terms_fit, grid)
strata_fit <- coxph(Surv(week, arrest) ~ fin + age + prio + strata(wexp), rossi, weights = w,
                    ties = "breslow")
keep("strata_weights_fitted", strata_fit)
keep("strata_weights_grid", strata_fit, grid)
write.csv(do.call(rbind, out), "tests/data/r_predict_terms.csv", row.names = FALSE)
curves <- termplot(terms_fit, se = TRUE, plot = FALSE)
write.csv(do.call(rbind, lapply(names(curves), function(term)
  data.frame(term = term, x = curves[[term]]$x, y = curves[[term]]$y,
             se = curves[[term]]$se))), "tests/data/r_termplot.csv", row.names = FALSE)
