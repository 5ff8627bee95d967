# The log-rank test with case weights, clusters or recurrent events, as R's robust score test of
# coxph(Surv(...) ~ group, ties = "breslow"): the oracle of
# tests/engine/descriptive/test_logrank_robust.py.  Run from the repository root with R 4.2.2
# and survival 3.5-3 (Debian bookworm: apt-get install r-cran-survival):
#   Rscript tests/data/r_logrank_robust.R > tests/data/r_logrank_robust.Rout
library(survival)
options(digits = 15)
cat(R.version.string, "survival", format(packageVersion("survival")), "\n")
show <- function(label, f) {
  cat("##", label, "\n")
  print(unname(summary(f)$robscore), digits = 15)
}
rossi <- read.csv("sample_data/rossi.csv")
rossi$id <- seq_len(nrow(rossi))
rossi$w <- 0.5 + ((rossi$id - 1) %% 7) / 4
rossi$g3 <- cut(rossi$prio, c(-1, 1, 4, 100))
show("rossi weighted", coxph(Surv(week, arrest) ~ g3, data = rossi, weights = w,
                             ties = "breslow"))
show("rossi weighted strata race", coxph(Surv(week, arrest) ~ g3 + strata(race), data = rossi,
                                         weights = w, ties = "breslow"))
show("rossi weighted cluster age", coxph(Surv(week, arrest) ~ g3, data = rossi, weights = w,
                                         ties = "breslow", cluster = pmin(age, 30)))
sp <- survSplit(Surv(week, arrest) ~ ., data = rossi, cut = 20, episode = "tgroup")
show("rossi split weighted by id", coxph(Surv(tstart, week, arrest) ~ fin, data = sp,
                                         weights = w, ties = "breslow", cluster = id))
bladder <- read.csv("tests/data/bladder.csv")
show("bladder by id", coxph(Surv(stop, event) ~ factor(rx), data = bladder, ties = "breslow",
                            cluster = id))
