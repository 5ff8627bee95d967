# residuals.coxph of Cox fits with a time-varying coefficient (survSplit at cut points),
# collapsed to the rows of the data before the split: the oracle of
# tests/engine/inference/test_residuals_cut_points.py.  Run from the repository root with
# R 4.2.2 and survival 3.5-3 (Debian bookworm: apt-get install r-cran-survival):
#   Rscript tests/data/r_residuals_cut_points.R > tests/data/r_residuals_cut_points.Rout
# It writes tests/data/r_residuals_cut_points.csv.gz: case, kind, term, row (1-based, the row of
# the data before the split), value.
library(survival)
options(digits = 15)
cat(R.version.string, "survival", format(packageVersion("survival")), "\n")
out <- list()
keep <- function(case, fit, rowid, kinds) {
  for (kind in kinds) {
    r <- residuals(fit, type = kind, collapse = rowid)
    if (is.null(dim(r))) {
      out[[length(out) + 1]] <<- data.frame(case = case, kind = kind, term = "",
                                            row = as.integer(names(r)), value = unname(r))
    } else {
      colnames(r) <- names(coef(fit))
      for (term in colnames(r)) {
        out[[length(out) + 1]] <<- data.frame(case = case, kind = kind, term = term,
                                              row = as.integer(rownames(r)),
                                              value = unname(r[, term]))
      }
    }
  }
  cat("##", case, "\n"); print(coef(fit), digits = 15)
}
rossi <- read.csv("sample_data/rossi.csv")
rossi$rowid <- seq_len(nrow(rossi))
sp <- survSplit(Surv(week, arrest) ~ ., data = rossi, cut = 20, episode = "tgroup")
sp$fin1 <- sp$fin * (sp$tgroup == 1); sp$fin2 <- sp$fin * (sp$tgroup == 2)
all <- c("martingale", "deviance", "score", "dfbeta")
f1 <- coxph(Surv(tstart, week, arrest) ~ fin1 + fin2 + age + prio, data = sp, ties = "efron")
keep("rossi efron", f1, sp$rowid, all)
f2 <- coxph(Surv(tstart, week, arrest) ~ fin1 + fin2 + age + prio, data = sp, ties = "breslow")
keep("rossi breslow", f2, sp$rowid, c("martingale", "dfbeta"))
f3 <- coxph(Surv(tstart, week, arrest) ~ fin1 + fin2 + age + prio + strata(wexp), data = sp,
            ties = "efron")
keep("rossi strata", f3, sp$rowid, c("martingale", "score"))
j <- read.csv("sample_data/jasa1.csv")
j$rowid <- seq_len(nrow(j))
js <- survSplit(Surv(start, stop, event) ~ ., data = j, cut = 100, episode = "tg")
js$age1 <- js$age * (js$tg == 1); js$age2 <- js$age * (js$tg == 2)
f5 <- coxph(Surv(start, stop, event) ~ age1 + age2 + transplant + surgery, data = js,
            ties = "efron")
keep("jasa1 entry", f5, js$rowid, all)
res <- do.call(rbind, out)
write.csv(res, gzfile("tests/data/r_residuals_cut_points.csv.gz"), row.names = FALSE)
cat("rows written:", nrow(res), "\n")
