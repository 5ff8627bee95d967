# Kaplan-Meier curves conditional on being event-free at a time, as R's survfit(start.time=):
# the oracle of tests/engine/descriptive/test_kaplan_meier_start_time.py.  Run from the
# repository root with R 4.2.2 and survival 3.5-3:
#   Rscript tests/data/r_km_start_time.R > tests/data/r_km_start_time.Rout
library(survival)
options(digits = 15, width = 200)
cat(R.version.string, "survival", format(packageVersion("survival")), "\n")
show <- function(label, f, times, tau) {
  s <- summary(f, times = times)
  cat("##", label, "\n")
  print(data.frame(group = sub(".*=", "", as.character(s$strata)), time = s$time,
                   n.risk = s$n.risk, n.event = s$n.event, surv = s$surv, std.err = s$std.err,
                   lower = s$lower, upper = s$upper), digits = 15)
  cat("##", label, "rmean\n")
  tab <- summary(f, rmean = tau)$table
  print(data.frame(group = sub(".*=", "", rownames(tab)), rmean = tab[, "rmean"],
                   se = tab[, "se(rmean)"], row.names = NULL), digits = 15)
}
rossi <- read.csv("sample_data/rossi.csv")
rossi$id <- seq_len(nrow(rossi))
rossi$w <- 0.5 + ((rossi$id - 1) %% 7) / 4
show("rossi from 20", survfit(Surv(week, arrest) ~ fin, data = rossi, start.time = 20),
     c(30, 52), 52)
show("rossi weighted from 20", survfit(Surv(week, arrest) ~ fin, data = rossi, weights = w,
                                       start.time = 20), c(30, 52), 52)
sp <- survSplit(Surv(week, arrest) ~ ., data = rossi, cut = 20, episode = "tgroup")
show("rossi split by id from 25", survfit(Surv(tstart, week, arrest) ~ fin, data = sp, id = id,
                                          start.time = 25), c(30, 52), 52)
