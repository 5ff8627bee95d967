// The conditional kernel of Yang2022 Fig. 3: one thread takes coordinate j's CCD step from the
// gradient and curvature the fused kernel left in device memory, so no scalar crosses to the
// host per coordinate.  It mirrors engine/regression/priors.py exactly (coordinate_step, trust_region):
//   Newton step on f = -l + lam1 |b| + lam2/2 b^2 (Yang2024 sec. 2.4): L1 at zero compares the
//   two directional derivatives, a step that would cross zero stops at zero;
//   trust region: step clipped to [-width, width], width <- max(2 |step|, width / 2)
//   (Yang2024 eq. 17);
//   an unpenalised coefficient beyond any finite hazard ratio (|b| range > diverged), still
//   moving outward, along which the likelihood is flat (no curvature left, or a Newton gain
//   g^2/h of at most *flat while the Newton step g/h moves x b outward by 0.01 or more across
//   the range; or |b| range beyond RUNAWAY) is frozen, as engine/regression/solvers/state.py
//   diverging.
// *step receives the step (0 when frozen or not moving) for update_coordinate; *biggest the
// cycle's largest relative step |step| / (1 + |b|).
#include "flag_scan.cuh"

#define RUNAWAY 200.0   // solvers/state.py RUNAWAY

__device__ inline double sign_of(double x) { return (double)((x > 0) - (x < 0)); }

__device__ inline double newton_step(double g, double h, double b, double lam1, double lam2)
{
    const double G = -g + lam2 * b, H = h + lam2;
    if (!(H > 0)) return 0.0;
    if (lam1 == 0.0) return -G / H;
    if (b == 0.0) {
        if (G + lam1 < 0) return -(G + lam1) / H;
        if (G - lam1 > 0) return -(G - lam1) / H;
        return 0.0;
    }
    const double delta = -(G + lam1 * sign_of(b)) / H;
    return (sign_of(b + delta) != sign_of(b)) ? -b : delta;
}

// The log-likelihood flat along a coordinate at b: solvers/state.py diverging's test.
__device__ inline bool flat_along(double g, double h, double b, double scale, double flat)
{
    if (!(h > 0)) return g * b >= 0;
    const double newton = g / h;
    return g * g / h <= flat && fabs(newton) * scale >= 0.01 && newton * b > 0;
}

extern "C" __global__ void ccd_step(long long j, const real* grad_hess, double* beta,
                                    double* width, const double* lam1, const double* lam2,
                                    unsigned char* frozen, const double* scale, double diverged,
                                    const double* flat, double* step, double* biggest)
{
    *step = 0.0;
    if (frozen[j]) return;
    const double b = beta[j], w = width[j];
    double delta = newton_step(grad_hess[0], grad_hess[1], b, lam1[j], lam2[j]);
    delta = (delta < -w) ? -w : ((delta > w) ? w : delta);
    const double grown = 2.0 * fabs(delta), shrunk = w / 2.0;
    width[j] = (shrunk > grown) ? shrunk : grown;
    if (delta == 0.0) return;
    const double moved = b + delta;
    beta[j] = moved;
    *step = delta;
    const double relative = fabs(delta) / (1.0 + fabs(moved));
    if (relative > *biggest) *biggest = relative;
    if (lam1[j] == 0.0 && lam2[j] == 0.0 && fabs(moved) * scale[j] > diverged && delta * moved > 0
        && (flat_along(grad_hess[0], grad_hess[1], moved, scale[j], *flat)
            || fabs(moved) * scale[j] > RUNAWAY))
        frozen[j] = 1;
}
