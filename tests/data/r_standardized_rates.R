# Directly standardised rates with Fay and Feuer's gamma limits (Stat Med 1997;16:791-801, the
# formula of epitools::ageadjust.direct, written out here with base R's qgamma: epitools is not
# installed), their ratios (Wald on the log scale) and differences, and standardised mortality
# ratios with R's poisson.test: the oracle of tests/engine/descriptive/test_standardization.py.
# Run from the repository root with R 4.2.2 (survival 3.5-3 for survSplit):
#   Rscript tests/data/r_standardized_rates.R > tests/data/r_standardized_rates.Rout
library(survival)
options(digits = 15, width = 200)
cat(R.version.string, "\n")
cells <- function(x, group, stratum) {
  out <- tapply(x, list(group, stratum), sum)
  out[is.na(out)] <- 0
  out
}
dsr <- function(label, events, time, group, stratum, per, std = "cohort", level = 0.95,
                reference = NULL) {
  d <- cells(events, group, stratum)
  t <- cells(time, group, stratum)
  ref <- if (is.null(reference)) rownames(d)[1] else reference
  raw <- if (identical(std, "cohort")) colSums(t) else if (identical(std, "reference"))
    t[ref, ] else std[colnames(d)]
  w <- raw / sum(raw)
  a <- 1 - level
  z <- qnorm(1 - a / 2)
  r <- sapply(rownames(d), function(g) sum(w * d[g, ] / t[g, ]))
  v <- sapply(rownames(d), function(g) sum(w^2 * d[g, ] / t[g, ]^2))
  m <- sapply(rownames(d), function(g) max(w / t[g, ]))
  cat("##", label, "rates\n")
  print(data.frame(group = rownames(d), events = rowSums(d), person_time = rowSums(t),
                   crude_rate = rowSums(d) / rowSums(t) * per, rate = r * per,
                   lower = qgamma(a / 2, r^2 / v, scale = v / r) * per,
                   upper = qgamma(1 - a / 2, (r + m)^2 / (v + m^2),
                                  scale = (v + m^2) / (r + m)) * per,
                   row.names = NULL), digits = 15)
  others <- setdiff(rownames(d), ref)
  se <- sqrt(v[others] / r[others]^2 + v[ref] / r[ref]^2)
  half <- z * sqrt(v[others] + v[ref])
  cat("##", label, "ratios\n")
  print(data.frame(group = others, rate_ratio = r[others] / r[ref],
                   rr_lower = r[others] / r[ref] * exp(-z * se),
                   rr_upper = r[others] / r[ref] * exp(z * se),
                   p = 2 * pnorm(-abs(log(r[others] / r[ref])) / se),
                   rate_difference = (r[others] - r[ref]) * per,
                   rd_lower = (r[others] - r[ref] - half) * per,
                   rd_upper = (r[others] - r[ref] + half) * per, row.names = NULL), digits = 15)
}
smr <- function(label, events, time, group, stratum, per, rates = NULL, level = 0.95) {
  d <- cells(events, group, stratum)
  t <- cells(time, group, stratum)
  lambda <- if (is.null(rates)) colSums(d) / colSums(t) else rates[colnames(d)] / per
  out <- t(sapply(rownames(d), function(g) {
    test <- poisson.test(sum(d[g, ]), sum(t[g, ] * lambda), conf.level = level)
    c(sum(d[g, ]), sum(t[g, ] * lambda), test$estimate, test$conf.int, test$p.value)
  }))
  cat("##", label, "smr\n")
  print(data.frame(group = rownames(d), observed = out[, 1], expected = out[, 2],
                   smr = out[, 3], lower = out[, 4], upper = out[, 5], p = out[, 6],
                   row.names = NULL), digits = 15)
}
rossi <- read.csv("sample_data/rossi.csv")
rossi$id <- seq_len(nrow(rossi))
rossi$ageband <- as.character(cut(rossi$age, c(0, 19, 22, 25, 30, 100),
                                  labels = c("<=19", "20-22", "23-25", "26-30", "31+")))
rossi$g3 <- as.character(cut(rossi$prio, c(-1, 1, 4, 100), labels = c("p0-1", "p2-4", "p5+")))
given <- c("<=19" = 5500, "20-22" = 6000, "23-25" = 6000, "26-30" = 6500, "31+" = 21000)
dsr("rossi fin by age", rossi$arrest, rossi$week, rossi$fin, rossi$ageband, 1000)
dsr("rossi fin by age given level 0.9", rossi$arrest, rossi$week, rossi$fin, rossi$ageband,
    100, std = given, level = 0.9)
dsr("rossi prio by age reference", rossi$arrest, rossi$week, rossi$g3, rossi$ageband, 1000,
    std = "reference", reference = "p2-4")
smr("rossi fin by age", rossi$arrest, rossi$week, rossi$fin, rossi$ageband, 1000)
smr("rossi prio by age", rossi$arrest, rossi$week, rossi$g3, rossi$ageband, 1000)
smr("rossi fin by age given rates level 0.9", rossi$arrest, rossi$week, rossi$fin,
    rossi$ageband, 1000, rates = c("<=19" = 12, "20-22" = 9, "23-25" = 6, "26-30" = 4,
                                   "31+" = 2.5), level = 0.9)
few <- rossi[rossi$prio >= 8, ]
smr("rossi prio >= 8 by fin, given rates", few$arrest, few$week, few$fin, few$ageband, 1000,
    rates = c("<=19" = 20, "20-22" = 15, "23-25" = 10, "26-30" = 8, "31+" = 5))
# attained age: rossi's age at release grows by week / 52.18 over follow-up; survSplit on the age
# scale cuts each row at ages 19.5, 22.5, 25.5 and 30.5 (whole ages at release and a year of
# follow-up at most: half-year limits are crossed; engine.split_lexis cuts the week scale)
rossi$a1 <- rossi$age + rossi$week / 52.18
lx <- survSplit(Surv(age, a1, arrest) ~ ., data = rossi, cut = c(19.5, 22.5, 25.5, 30.5),
                episode = "band")
lx$pt <- (lx$a1 - lx$age) * 52.18
bands <- c("<= 19.5", "(19.5, 22.5]", "(22.5, 25.5]", "(25.5, 30.5]", "> 30.5")
lx$label <- bands[lx$band]
cat("## rossi attained age cells\n")
print(data.frame(fin = rep(c(0, 1), each = 5),
                 band = rep(seq_along(bands), 2),
                 events = as.vector(t(cells(lx$arrest, lx$fin, lx$band))),
                 person_time = as.vector(t(cells(lx$pt, lx$fin, lx$band))), row.names = NULL),
      digits = 15)
cat("## rossi attained age pieces\n")
print(data.frame(rows = nrow(lx)), digits = 15)
dsr("rossi fin by attained age", lx$arrest, lx$pt, lx$fin, lx$label, 1000)
smr("rossi fin by attained age", lx$arrest, lx$pt, lx$fin, lx$label, 1000)
# standard populations (typed here from the publications, as engine.standard_population cites
# them): rossi's ages at release in their groups [lower, upper), and its attained ages cut at
# every limit of the WHO standard (the k-th piece of survSplit is the k-th group); the year of
# follow-up taken as four (13.045 weeks a unit of age), so that pieces cross the 5-year limits
who <- c(8860, 8690, 8600, 8470, 8220, 7930, 7610, 7150, 6590, 6040, 5370, 4550, 3720, 2960,
         2210, 1520, 910, 440, 150, 40, 5)
names(who) <- c(paste(seq(0, 95, 5), seq(4, 99, 5), sep = "-"), "100+")
us <- c(13818, 55317, 145565, 138646, 135573, 162613, 134834, 87247, 66037, 44842, 15508)
us_lower <- c(0, 1, 5, 15, 25, 35, 45, 55, 65, 75, 85)
names(us) <- c("0", "1-4", paste(us_lower[3:10], us_lower[4:11] - 1, sep = "-"), "85+")
segi <- c(12000, 10000, 9000, 9000, 8000, 8000, 6000, 6000, 6000, 6000, 5000, 4000, 4000, 3000,
          2000, 1000, 500, 500)
names(segi) <- c(paste(seq(0, 80, 5), seq(4, 84, 5), sep = "-"), "85+")
rossi$who <- names(who)[findInterval(rossi$age, seq(0, 100, 5))]
rossi$us <- names(us)[findInterval(rossi$age, us_lower)]
rossi$segi <- names(segi)[findInterval(rossi$age, seq(0, 85, 5))]
dsr("rossi fin by age at release, who2000", rossi$arrest, rossi$week, rossi$fin, rossi$who,
    1000, std = who)
dsr("rossi prio by age at release, us2000", rossi$arrest, rossi$week, rossi$g3, rossi$us,
    1000, std = us)
dsr("rossi fin by age at release, segi1960, level 0.9", rossi$arrest, rossi$week, rossi$fin,
    rossi$segi, 100, std = segi, level = 0.9)
rossi$a4 <- rossi$age + rossi$week / 13.045
lw <- survSplit(Surv(age, a4, arrest) ~ ., data = rossi, cut = seq(5, 100, 5),
                episode = "piece")
lw$pt <- (lw$a4 - lw$age) * 13.045
lw$group <- names(who)[lw$piece]
cat("## rossi attained age who2000 pieces\n")
print(data.frame(rows = nrow(lw)), digits = 15)
dsr("rossi fin by attained age, who2000", lw$arrest, lw$pt, lw$fin, lw$group, 1000, std = who)
smr("rossi fin by age at release, who2000 groups", rossi$arrest, rossi$week, rossi$fin,
    rossi$who, 1000)
smr("rossi fin by age at release, who2000 groups, given rates", rossi$arrest, rossi$week,
    rossi$fin, rossi$who, 1000, rates = c("15-19" = 11, "20-24" = 8, "25-29" = 5.5,
                                          "30-34" = 4, "35-39" = 3, "40-44" = 2.5))
