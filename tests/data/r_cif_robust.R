# Aalen-Johansen cumulative incidence with survfit's (robust, infinitesimal-jackknife) standard
# errors and log limits: the oracle of tests/engine/descriptive/test_cumulative_incidence_r.py.
# Run from the repository root with R 4.2.2 and survival 3.5-3 (Debian bookworm:
# apt-get install r-cran-survival):
#   Rscript tests/data/r_cif_robust.R > tests/data/r_cif_robust.Rout
library(survival)
options(digits = 15, width = 200)
cat(R.version.string, "survival", format(packageVersion("survival")), "\n")
show <- function(label, f, cause, times) {
  cat("##", label, "\n")
  s <- summary(f, times = times)
  k <- match(as.character(cause), s$states)
  strata <- if (is.null(s$strata)) "all" else as.character(s$strata)
  print(data.frame(group = strata, time = s$time, cif = s$pstate[, k], std.err = s$std.err[, k],
                   lower = s$lower[, k], upper = s$upper[, k]), digits = 15)
}
b <- read.csv("sample_data/bmtcrr.csv")
b$w <- 0.5 + ((seq_len(nrow(b)) - 1) %% 7) / 4
b$id <- seq_len(nrow(b))
times <- c(2, 5, 10, 20, 50, 100)
f <- survfit(Surv(ftime, factor(Status)) ~ D, data = b)
show("bmtcrr by D cause 1", f, 1, times)
show("bmtcrr by D cause 2", f, 2, times)
fw <- survfit(Surv(ftime, factor(Status)) ~ D, data = b, weights = w)
show("bmtcrr by D weighted cause 1", fw, 1, times)
# survfit's multi-state curves (survfitCI, survival 3.5-3) leave cluster= out of their variance
# (they cluster by id only); the clustered SE is summed here from R's own row influences (per
# unit weight in influence.pstate, where survfitKM's influence.surv carries the weight)
fi <- survfit(Surv(ftime, factor(Status)) ~ 1, data = b, weights = w, influence = TRUE)
s <- summary(fi, times = times)
k <- match("1", fi$states)
at <- findInterval(times, fi$time) + 1       # influence.pstate's first column is time 0
by_phase <- rowsum(b$w * fi$influence.pstate[, at, k], b$Phase)
cat("## bmtcrr weighted clustered by Phase cause 1 std.err\n")
print(data.frame(time = times, cif = s$pstate[, k], std.err = sqrt(colSums(by_phase^2))),
      digits = 15)
fl <- survfit(Surv(ftime, factor(Status)) ~ 1, data = b, weights = w, conf.type = "log-log")
show("bmtcrr weighted cause 1 log-log", fl, 1, times)
# delayed entry: the first 60 patients enter at a third of their follow-up (4.8 / 3 is
# 1.5999999999999999, which survfit's timefix takes as the time 1.6)
b$entry <- ifelse(b$id <= 60, b$ftime / 3, 0)
fe <- survfit(Surv(entry, ftime, factor(Status)) ~ 1, data = b, weights = w, id = id)
show("bmtcrr delayed entry weighted cause 1", fe, 1, times)
# (start, stop] episodes of one subject, split at month 6, clustered by id
first <- transform(b, t0 = 0, t1 = pmin(ftime, 6), st = ifelse(ftime <= 6, Status, 0))
later <- transform(subset(b, ftime > 6), t0 = 6, t1 = ftime, st = Status)
sp <- rbind(first, later)
fs <- survfit(Surv(t0, t1, factor(st)) ~ 1, data = sp, weights = w, id = id)
show("bmtcrr split by id weighted cause 1", fs, 1, times)
