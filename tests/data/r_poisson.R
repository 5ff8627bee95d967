# Poisson regression of events on person-time (glm with a log person-time offset), the oracle
# of tests/engine/regression/models/test_poisson.py.  Run from the repository root with R 4.2.2
# (survival 3.5-3 for survSplit):
#   Rscript tests/data/r_poisson.R > tests/data/r_poisson.Rout
library(survival)
options(digits = 15, width = 200)
cat(R.version.string, "\n")
# converged to rounding: glm's standard errors are those of its last iteration's weights
tight <- glm.control(epsilon = 1e-15, maxit = 100)
show <- function(label, fit) {
  s <- summary(fit)$coefficients
  cat("##", label, "\n")
  print(data.frame(term = rownames(s), coef = s[, 1], se = s[, 2], row.names = NULL),
        digits = 15)
  cat("##", label, "loglik\n")
  print(data.frame(loglik = as.numeric(logLik(fit)), deviance = deviance(fit)), digits = 15)
}
rossi <- read.csv("sample_data/rossi.csv")
show("rossi", glm(arrest ~ fin + age + prio + offset(log(week)), family = poisson,
                  data = rossi, control = tight))
# the piecewise-exponential model: follow-up split at weeks 20 and 40, a rate per band
sp <- survSplit(Surv(week, arrest) ~ ., data = rossi, cut = c(20, 40), episode = "band")
sp$b2 <- as.numeric(sp$band == 2)
sp$b3 <- as.numeric(sp$band == 3)
show("rossi bands", glm(arrest ~ b2 + b3 + fin + age + prio + offset(log(week - tstart)),
                        family = poisson, data = sp, control = tight))
# the rates by band against one rate throughout, both on the split rows (R's anova)
flat <- glm(arrest ~ fin + age + prio + offset(log(week - tstart)), family = poisson, data = sp,
            control = tight)
banded <- glm(arrest ~ b2 + b3 + fin + age + prio + offset(log(week - tstart)),
              family = poisson, data = sp, control = tight)
cat("## rossi bands against none\n")
print(anova(flat, banded, test = "LRT"), digits = 15)
# whole-number case weights count rows
rossi$n <- 1 + seq_len(nrow(rossi)) %% 3
show("rossi weighted", glm(arrest ~ fin + age + wexp + offset(log(week)), family = poisson,
                           data = rossi, weights = n, control = tight))
