# survfit's robust (infinitesimal-jackknife) standard errors of Kaplan-Meier curves: the oracle
# of tests/engine/descriptive/test_kaplan_meier_robust.py.  Run from the repository root with
# R 4.2.2 and survival 3.5-3 (Debian bookworm: apt-get install r-cran-survival):
#   Rscript tests/data/r_km_robust.R > tests/data/r_km_robust.Rout
library(survival)
options(digits = 15, width = 200)
cat(R.version.string, "survival", format(packageVersion("survival")), "\n")
show <- function(label, f, times = NULL) {
  cat("##", label, "\n")
  if (is.null(times)) {
    s <- summary(f, censored = TRUE)
  } else {
    s <- summary(f, times = times)
  }
  strata <- if (is.null(s$strata)) "all" else as.character(s$strata)
  print(data.frame(group = strata, time = s$time, surv = s$surv, std.err = s$std.err,
                   lower = s$lower, upper = s$upper), digits = 15)
}
# the restricted mean's robust SE from R's own influence: the area's derivative is the sum of
# each time's influence on S times the width it holds, summed within clusters
rmst_se <- function(f, tau) {
  infl <- if (is.list(f$influence.surv)) f$influence.surv else list(f$influence.surv)
  ends <- if (is.null(f$strata)) rep(1, length(f$time)) else rep(seq_along(f$strata), f$strata)
  sapply(seq_along(infl), function(g) {
    t <- f$time[ends == g]
    keep <- t <= tau
    widths <- diff(c(t[keep], tau))
    sqrt(sum((infl[[g]][, keep, drop = FALSE] %*% widths)^2))
  })
}
rossi <- read.csv("sample_data/rossi.csv")
rossi$id <- seq_len(nrow(rossi))
rossi$w <- 0.5 + ((rossi$id - 1) %% 7) / 4
sp <- survSplit(Surv(week, arrest) ~ ., data = rossi, cut = 20, episode = "tgroup")
f1 <- survfit(Surv(tstart, week, arrest) ~ fin, data = sp, weights = w, id = id,
              influence = TRUE)
show("rossi split, fractional weights, by id", f1)
cat("## rossi split rmst_se 52\n"); print(rmst_se(f1, 52), digits = 15)
show("rossi split, rows as clusters", survfit(Surv(tstart, week, arrest) ~ fin, data = sp,
                                              weights = w), times = c(10, 52))
show("rossi cluster prio, no weights",
     survfit(Surv(week, arrest) ~ fin, data = rossi, cluster = pmin(prio, 6)))
lung <- read.csv("sample_data/lung.csv")
lung$w <- 0.5 + ((seq_len(nrow(lung)) - 1) %% 7) / 4
f2 <- survfit(Surv(time, status) ~ sex, data = lung, weights = w)
cat("## lung weighted quantiles\n")
print(quantile(f2, c(0.25, 0.5, 0.75)), digits = 15)
show("lung weighted at", f2, times = c(100, 365, 730))
bladder <- read.csv("tests/data/bladder.csv")
show("bladder by id", survfit(Surv(stop, event) ~ rx, data = bladder, id = id),
     times = c(10, 20, 30, 40))
show("bladder robust = FALSE", survfit(Surv(stop, event) ~ rx, data = bladder, id = id,
                                        robust = FALSE), times = c(10, 20, 30, 40))
cat("## lung rmean 365 by sex\n")
print(summary(survfit(Surv(time, status) ~ sex, data = lung), rmean = 365)$table[, c("rmean", "se(rmean)")],
      digits = 15)
