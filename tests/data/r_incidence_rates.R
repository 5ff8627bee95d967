# Incidence rates, their exact limits and exact rate ratios, as R's poisson.test gives them:
# the oracle of tests/engine/descriptive/test_incidence_rates.py.  Run from the repository root
# with R 4.2.2 (base R's stats; survival 3.5-3 for survSplit):
#   Rscript tests/data/r_incidence_rates.R > tests/data/r_incidence_rates.Rout
library(survival)
options(digits = 15, width = 200)
cat(R.version.string, "\n")
rates <- function(label, events, time, group, per, level = 0.95, reference = NULL) {
  d <- tapply(events, group, sum)
  pt <- tapply(time, group, sum)
  cat("##", label, "rates\n")
  ci <- t(sapply(names(d), function(g) poisson.test(d[[g]], pt[[g]], conf.level = level)$conf.int))
  print(data.frame(group = names(d), events = as.vector(d), person_time = as.vector(pt),
                   rate = as.vector(d / pt) * per, lower = ci[, 1] * per,
                   upper = ci[, 2] * per, row.names = NULL), digits = 15)
  ref <- if (is.null(reference)) names(d)[1] else reference
  others <- setdiff(names(d), ref)
  cat("##", label, "ratios\n")
  out <- t(sapply(others, function(g) {
    test <- poisson.test(c(d[[g]], d[[ref]]), c(pt[[g]], pt[[ref]]), conf.level = level)
    c(test$estimate, test$conf.int, test$p.value)
  }))
  print(data.frame(group = others, rate_ratio = out[, 1], rr_lower = out[, 2],
                   rr_upper = out[, 3], p = out[, 4], row.names = NULL), digits = 15)
}
rossi <- read.csv("sample_data/rossi.csv")
rossi$id <- seq_len(nrow(rossi))
rates("rossi fin", rossi$arrest, rossi$week, rossi$fin, 1000)
rossi$g3 <- as.character(cut(rossi$prio, c(-1, 1, 4, 100), labels = c("p0-1", "p2-4", "p5+")))
rates("rossi prio level 0.9", rossi$arrest, rossi$week, rossi$g3, 100, level = 0.9,
      reference = "p2-4")
rossi$gz <- ifelse(rossi$arrest == 0 & rossi$id %% 5 == 0, "none",
                   ifelse(rossi$fin == 1, "a", "b"))
rates("rossi zero events", rossi$arrest, rossi$week, rossi$gz, 1000)
sp <- survSplit(Surv(week, arrest) ~ ., data = rossi, cut = c(10, 20, 30), episode = "tgroup")
rates("rossi split", sp$arrest, sp$week - sp$tstart, sp$fin, 1000)
bmt <- read.csv("sample_data/bmtcrr.csv")
rates("bmtcrr cause 1 by D", as.numeric(bmt$Status == 1), bmt$ftime, bmt$D, 12)
rates("bmtcrr cause 2 by D", as.numeric(bmt$Status == 2), bmt$ftime, bmt$D, 12)
bands <- survSplit(Surv(week, arrest) ~ ., data = rossi, cut = c(20, 40), episode = "band")
for (b in 1:3) {
  part <- bands[bands$band == b, ]
  rates(paste("rossi band", b), part$arrest, part$week - part$tstart, part$fin, 1000)
}
