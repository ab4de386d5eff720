#include "kernels/toi.hpp"

#include "base/axes.hpp"

#include <algorithm>
#include <cmath>

namespace ballistic::detail {
namespace {

// A closed gap counts as closing now when the first non-zero derivative at τ = 0 is negative.
bool closing_now(const std::array<double, 5>& p) {
    for (std::size_t k = 1; k < p.size(); ++k) {
        if (p[k] < 0.0) return true;
        if (p[k] > 0.0) return false;
    }
    return false;
}

double evaluate(const double* p, int degree, double t) {
    double value = p[degree];
    for (int k = degree - 1; k >= 0; --k) value = value * t + p[k];
    return value;
}

int degree_of(const double* p, int max_degree) {
    int degree = max_degree;
    while (degree > 0 && p[degree] == 0.0) --degree;
    return degree;
}

// Bound on the rounding error of evaluate(p, degree, t): 2·degree·u Σ |p_k| |t|^k (Higham's
// bound for Horner's rule, γ_2n ≈ 2n·u with u = 2⁻⁵³), itself evaluated by Horner's rule; infinite
// when that sum overflows.
double evaluation_error(const double* p, int degree, double t) {
    const double magnitude = std::abs(t);
    double sum = std::abs(p[degree]);
    for (int k = degree - 1; k >= 0; --k) sum = sum * magnitude + std::abs(p[k]);
    return 2.0 * degree * 0x1p-53 * sum;
}
// Is a computed value zero within that error bound (a finite one: an overflowed bound proves
// nothing)?
bool zero_within(double value, double error) { return std::abs(value) <= error && error < kNever; }

// Refines a root of p inside [lo, hi] where p(lo) and p(hi) have opposite signs (or one is
// zero): Newton steps where they stay inside the bracket, bisection otherwise, until p(t) is
// zero within the rounding error of its evaluation, so that its computed sign is no longer
// reliable (Newton gets there in a few steps; bisecting the far end of the bracket down to one
// ulp after that took up to ~55 more), or the bracket cannot shrink any further in double
// precision.
double refine_root(const double* p, int degree, double lo, double hi) {
    double flo = evaluate(p, degree, lo);
    double fhi = evaluate(p, degree, hi);
    if (flo == 0.0) return lo;
    if (fhi == 0.0) return hi;
    const bool rising = flo < 0.0;
    double t = 0.5 * (lo + hi);
    for (int iteration = 0; iteration < 200; ++iteration) {
        double f = evaluate(p, degree, t);
        if (zero_within(f, evaluation_error(p, degree, t))) return t;
        if ((f < 0.0) == rising) {
            lo = t;
            flo = f;
        } else {
            hi = t;
            fhi = f;
        }
        double df = p[degree] * degree;
        for (int k = degree - 1; k >= 1; --k) df = df * t + p[k] * k;
        double next = (df != 0.0) ? t - f / df : lo;
        if (!(next > lo && next < hi)) next = 0.5 * (lo + hi);
        if (next <= lo || next >= hi) break;  // the bracket is one ulp wide
        t = next;
    }
    return std::abs(flo) < std::abs(fhi) ? lo : hi;
}

// All real roots of p (degree ≤ 4) in [lo, hi], ascending, written to `roots`; returns count.
// Critical points from the derivative split [lo, hi] into monotone pieces; each piece holds at
// most one root, found by bracketed refinement.
int roots_in(const double* p, int max_degree, double lo, double hi, double* roots) {
    const int degree = degree_of(p, max_degree);
    int count = 0;
    if (degree == 0) return 0;
    if (degree == 1) {
        const double t = -p[0] / p[1];
        if (t >= lo && t <= hi) roots[count++] = t;
        return count;
    }
    if (degree == 2) {
        const double disc = p[1] * p[1] - 4.0 * p[2] * p[0];
        if (disc < 0.0) return 0;
        const double q = -0.5 * (p[1] + std::copysign(std::sqrt(disc), p[1]));
        double r[2] = {q / p[2], q != 0.0 ? p[0] / q : 0.0};
        if (r[0] > r[1]) std::swap(r[0], r[1]);
        for (double t : r)
            if (t >= lo && t <= hi) roots[count++] = t;
        return count;
    }
    double derivative[4];
    for (int k = 1; k <= degree; ++k) derivative[k - 1] = p[k] * k;
    double edges[6];
    edges[0] = lo;
    int n_edges = 1 + roots_in(derivative, degree - 1, lo, hi, edges + 1);
    edges[n_edges++] = hi;
    for (int e = 0; e + 1 < n_edges; ++e) {
        const double a = edges[e], b = edges[e + 1];
        const double fa = evaluate(p, degree, a), fb = evaluate(p, degree, b);
        if (fa == 0.0) {
            if (count == 0 || roots[count - 1] != a) roots[count++] = a;
        } else if ((fa < 0.0) != (fb < 0.0) && fb != 0.0) {
            roots[count++] = refine_root(p, degree, a, b);
        }
        if (e + 2 == n_edges && fb == 0.0) roots[count++] = b;
    }
    return count;
}

// Cauchy's bound: every real root of p lies in |τ| ≤ 1 + max |p_k / p_n|.
double root_bound(const std::array<double, 5>& p, int degree) {
    double bound = 0.0;
    for (int k = 0; k < degree; ++k) bound = std::max(bound, std::abs(p[k] / p[degree]));
    return 1.0 + bound;
}

}  // namespace

double first_closing_quadratic(double c0, double c1, double c2, double horizon) {
    const bool closed = c0 <= 0.0;
    if (closed && (c1 < 0.0 || (c1 == 0.0 && c2 < 0.0))) return 0.0;
    double t;
    if (c2 == 0.0) {
        if (closed || c1 >= 0.0) return kNever;
        t = -c0 / c1;
    } else {
        const double disc = c1 * c1 - 4.0 * c2 * c0;
        if (disc < 0.0) {
            // A closed gap pulled back before it could open: it closes again when it stops
            // opening, at its maximum (a resting contact, not a body sinking through).
            if (!(closed && c2 < 0.0)) return kNever;
            t = -c1 / (2.0 * c2);
            return t <= horizon ? t : kNever;
        }
        const double q = -0.5 * (c1 + std::copysign(std::sqrt(disc), c1));
        if (q == 0.0) return kNever;  // c0 = c1 = 0: a closed, stationary gap (handled above)
        const double r1 = q / c2, r2 = c0 / q;
        // The gap closes through the smaller root of a convex parabola, the larger of a concave one.
        t = (c2 > 0.0) ? std::min(r1, r2) : std::max(r1, r2);
        if (closed ? !(t > 0.0) : t < 0.0) return kNever;
    }
    return t <= horizon ? t : kNever;
}

double first_closing_polynomial(const std::array<double, 5>& p, double horizon) {
    const int degree = degree_of(p.data(), 4);
    if (degree <= 2) return first_closing_quadratic(p[0], p[1], p[2], horizon);
    if (p[0] <= 0.0 && closing_now(p)) return 0.0;
    const double end = std::min(horizon, root_bound(p, degree));
    if (!(end > 0.0)) return kNever;
    // Monotone pieces of the gap between the critical points; the first piece that starts
    // open and ends closed holds the time of impact.
    double derivative[4];
    for (int k = 1; k <= degree; ++k) derivative[k - 1] = p[static_cast<std::size_t>(k)] * k;
    double edges[6];
    edges[0] = 0.0;
    int n_edges = 1 + roots_in(derivative, degree - 1, 0.0, end, edges + 1);
    edges[n_edges++] = end;
    for (int e = 0; e + 1 < n_edges; ++e) {
        const double a = edges[e], b = edges[e + 1];
        const double fa = evaluate(p.data(), degree, a), fb = evaluate(p.data(), degree, b);
        if (fa > 0.0 && fb <= 0.0) return refine_root(p.data(), degree, a, b);
        // An open gap that comes down to zero within rounding error at the piece's end touches
        // there: a double root (a grazing contact), which the computed critical point only
        // approximates, so the gap there may round to either side of zero.
        if (fa > 0.0 && zero_within(fb, evaluation_error(p.data(), degree, b))) return b;
        // A closed gap that never opened closes again where it turns back (its maximum).
        if (fa <= 0.0 && fb < fa) return a;
    }
    return kNever;
}

namespace {
// Gap polynomial |w0 + w1 τ + w2 τ²|² − ρ².
std::array<double, 5> squared_gap(Vec3 w0, Vec3 w1, Vec3 w2, double rho) {
    return {dot(w0, w0) - rho * rho, 2.0 * dot(w0, w1), dot(w1, w1) + 2.0 * dot(w0, w2),
            2.0 * dot(w1, w2), dot(w2, w2)};
}

Vec3 across(Vec3 w, Vec3 u) { return w - u * dot(w, u); }
}  // namespace

double toi_ball_ball(Vec3 dp, Vec3 dv, Vec3 da, double sigma, double horizon) {
    if (da == Vec3{}) {
        return first_closing_quadratic(dot(dp, dp) - sigma * sigma, 2.0 * dot(dp, dv), dot(dv, dv),
                                       horizon);
    }
    return first_closing_polynomial(squared_gap(dp, dv, da * 0.5, sigma), horizon);
}

double toi_apart(Vec3 dp, Vec3 dv, Vec3 da, double reach, double horizon) {
    // reach² − |dp(τ)|²: a gap that closes when the centres are reach apart.
    std::array<double, 5> p = squared_gap(dp, dv, da * 0.5, reach);
    for (double& c : p) c = -c;
    return first_closing_polynomial(p, horizon);
}

double toi_ball_plane(Vec3 p, Vec3 v, Vec3 a, double r, Vec3 point, Vec3 n, double horizon) {
    return first_closing_quadratic(dot(n, p - point) - r, dot(n, v), 0.5 * dot(n, a), horizon);
}

double toi_ball_cylinder(Vec3 p, Vec3 v, Vec3 a, double r, Vec3 point, Vec3 u, double R,
                         double horizon) {
    const Vec3 w = p - point;
    return first_closing_polynomial(squared_gap(across(w, u), across(v, u), across(a, u) * 0.5, R + r), horizon);
}

namespace {
// The real roots of c0 + c1 τ + c2 τ² in (0, end), ascending, appended to `out` at `n`.
void add_roots(double c0, double c1, double c2, double end, double* out, int& n) {
    double r[2];
    int m = 0;
    if (c2 == 0.0) {
        if (c1 != 0.0) r[m++] = -c0 / c1;
    } else {
        const double disc = c1 * c1 - 4.0 * c2 * c0;
        if (disc < 0.0) return;
        const double q = -0.5 * (c1 + std::copysign(std::sqrt(disc), c1));
        if (q != 0.0) {
            r[m++] = q / c2;
            r[m++] = c0 / q;
        } else {
            r[m++] = 0.0;
        }
    }
    for (int k = 0; k < m; ++k)
        if (r[k] > 0.0 && r[k] < end) out[n++] = r[k];
}

// The body of a segment alone (no ends): the infinite cylinder's gap while the centre is level
// with the segment, 0 ≤ (p − a)·u ≤ L, which s(τ) = s0 + s1 τ + s2 τ² crosses at 0 and L at most
// twice each.
double toi_segment_body(Vec3 p, Vec3 v, Vec3 acc, double r, Vec3 a, Vec3 u, double L, double R, double horizon) {
    const double rho = R + r;
    const Vec3 half = acc * 0.5;
    const Vec3 w = p - a;
    const double s0 = dot(w, u), s1 = dot(v, u), s2 = dot(half, u);
    double edges[6];
    int n = 1;
    edges[0] = 0.0;
    add_roots(s0, s1, s2, horizon, edges, n);
    add_roots(s0 - L, s1, s2, horizon, edges, n);
    for (int e = 2; e < n; ++e)  // at most four roots: insertion sort
        for (int f = e; f > 1 && edges[f] < edges[f - 1]; --f) std::swap(edges[f], edges[f - 1]);
    edges[n++] = horizon;
    for (int e = 0; e + 1 < n; ++e) {
        const double t0 = edges[e], t1 = edges[e + 1];
        if (!(t1 > t0)) continue;
        // Level in between? (At the middle, or a step past t0 on an unbounded interval.)
        const double mid = t1 < kNever ? 0.5 * (t0 + t1) : t0 + std::max(1.0, t0);
        const double s = s0 + (s1 + s2 * mid) * mid;
        if (!(s >= 0.0 && s <= L)) continue;
        const Vec3 w0 = w + (v + half * t0) * t0, v0 = v + acc * t0;
        const double tau = first_closing_polynomial(squared_gap(across(w0, u), across(v0, u), across(half, u), rho),
                                                    t1 - t0);
        if (tau != kNever) return t0 + tau;  // later intervals come later
    }
    return kNever;
}

double toi_ball_point(Vec3 p, Vec3 v, Vec3 acc, double r, Vec3 q, double R, double horizon) {
    return first_closing_polynomial(squared_gap(p - q, v, acc * 0.5, R + r), horizon);
}

}  // namespace

double toi_ball_capsule(Vec3 p, Vec3 v, Vec3 acc, double r, Vec3 a, Vec3 b, Vec3 u, double L, double R,
                        double horizon) {
    double best = toi_ball_point(p, v, acc, r, a, R, horizon);
    if (!(L > 0.0)) return best;
    best = std::min(best, toi_ball_point(p, v, acc, r, b, R, std::min(best, horizon)));
    return std::min(best, toi_segment_body(p, v, acc, r, a, u, L, R, std::min(best, horizon)));
}

double toi_ball_block(Vec3 p, Vec3 v, Vec3 acc, double r, Vec3 lo, Vec3 hi, double horizon) {
    double found = kNever;  // the earliest contact so far
    // The parts' horizon: the earliest contact so far, or the horizon (every part's answer lies
    // within it).
    auto best = [&] { return std::min(found, horizon); };
    auto keep = [&](double tau) { found = std::min(found, tau); };
    // Faces: the plane of the face, where the centre's other two coordinates lie over the face. A
    // centre on the block's side of a face's plane (a ball beside the block) meets the face only
    // after coming out past the plane and back: at the later root of a concave gap.
    for (int d = 0; d < 3; ++d) {
        const double x = axis(p, d), vd = axis(v, d), ad = 0.5 * axis(acc, d);
        for (const bool upper : {false, true}) {
            const double c0 = upper ? x - axis(hi, d) - r : axis(lo, d) - x - r;
            const double c1 = upper ? vd : -vd, c2 = upper ? ad : -ad;
            double tau = kNever;
            if (c0 >= -r) {
                tau = first_closing_quadratic(c0, c1, c2, best());
            } else if (c2 < 0.0) {
                const double disc = c1 * c1 - 4.0 * c2 * c0;
                if (disc >= 0.0) {
                    const double q = -0.5 * (c1 + std::copysign(std::sqrt(disc), c1));
                    const double later = std::max(q / c2, c0 / q);
                    if (later > 0.0 && later <= best()) tau = later;
                }
            }
            if (tau == kNever || !(tau < found)) continue;
            bool over = true;
            for (int e = 0; e < 3; ++e) {
                if (e == d) continue;
                const double at = axis(p, e) + (axis(v, e) + 0.5 * axis(acc, e) * tau) * tau;
                over = over && at >= axis(lo, e) && at <= axis(hi, e);
            }
            if (over) keep(tau);
        }
    }
    // Corners, then the bodies of the twelve edges.
    for (int c = 0; c < 8; ++c) {
        const Vec3 q{(c & 1) ? hi.x : lo.x, (c & 2) ? hi.y : lo.y, (c & 4) ? hi.z : lo.z};
        keep(toi_ball_point(p, v, acc, r, q, 0.0, best()));
    }
    for (int d = 0; d < 3; ++d) {
        const Vec3 u{d == 0 ? 1.0 : 0.0, d == 1 ? 1.0 : 0.0, d == 2 ? 1.0 : 0.0};
        const double L = axis(hi, d) - axis(lo, d);
        for (int c = 0; c < 4; ++c) {
            // The edge along axis d through corner c of the other two axes.
            const int e1 = (d + 1) % 3, e2 = (d + 2) % 3;
            Vec3 a = lo;
            set_axis(a, e1, (c & 1) ? axis(hi, e1) : axis(lo, e1));
            set_axis(a, e2, (c & 2) ? axis(hi, e2) : axis(lo, e2));
            keep(toi_segment_body(p, v, acc, r, a, u, L, 0.0, best()));
        }
    }
    return found;
}

double ray_sphere(Vec3 o, Vec3 d, Vec3 centre, double r) {
    const Vec3 oc = centre - o;
    const double c = dot(oc, oc) - r * r;
    if (c <= 0.0) return 0.0;
    const double b = dot(oc, d);
    if (b <= 0.0) return -1.0;
    const double disc = b * b - dot(d, d) * c;
    if (disc < 0.0) return -1.0;
    return c / (b + std::sqrt(disc));  // smaller root, free of cancellation
}

void toi_ball_ball_batch(const PairLanes& l, double horizon, std::span<double> out) {
    for (std::size_t k = 0; k < out.size(); ++k) {
        out[k] = toi_ball_ball({l.dpx[k], l.dpy[k], l.dpz[k]}, {l.dvx[k], l.dvy[k], l.dvz[k]},
                               {l.dax[k], l.day[k], l.daz[k]}, l.sigma[k], horizon);
    }
}

void toi_neighbours_batch(const Mover& self, const NeighbourLanes& l, double horizon, std::span<double> out) {
    const Vec3 a = self.a;
    const bool shifted = l.shifted(out.size());
    for (std::size_t k = 0; k < out.size(); ++k) {
        const std::size_t j = l.slot[k];
        const Vec3 shift = shifted ? Vec3{l.sx[k], l.sy[k], l.sz[k]} : Vec3{};
        const double tau = self.now - l.t[j];
        const Vec3 p{l.x[j] + (l.vx[j] + 0.5 * a.x * tau) * tau, l.y[j] + (l.vy[j] + 0.5 * a.y * tau) * tau,
                     l.z[j] + (l.vz[j] + 0.5 * a.z * tau) * tau};
        const Vec3 v{l.vx[j] + a.x * tau, l.vy[j] + a.y * tau, l.vz[j] + a.z * tau};
        out[k] = toi_ball_ball((p - self.p) + shift, v - self.v, Vec3{},
                               self.r + l.radius[j], horizon);
    }
}

}  // namespace ballistic::detail
