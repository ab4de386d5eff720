// Ballistic — the one xsimd implementation of the SIMD kernels (toi_simd.hpp), templated on the
// instruction set. Each toi_simd_<arch>.cpp instantiates it with its own -m flags; toi_simd.cpp
// only sees SimdTable and the per-arch getters.
//
// Same bits as the scalar references: every lane runs the operations of the scalar code in the
// same order (operator precedence and left-to-right sums included), using only IEEE-exact
// basic operations; the translation units are built with -ffp-contract=off so that no
// multiply-add is fused. Branches of the scalar code become masks evaluated in the same order
// of precedence; lanes masked out may compute inf or NaN, which is discarded.
#pragma once

#include "kernels/toi.hpp"
#include "kernels/toi_simd_table.hpp"

#include <xsimd/xsimd.hpp>

#include <array>
#include <cstddef>
#include <cstdint>
#include <utility>

namespace ballistic::detail {

template <class Arch>
struct SimdImpl {
    using B = xsimd::batch<double, Arch>;
    using M = xsimd::batch_bool<double, Arch>;
    static constexpr std::size_t W = B::size;

    // Lanes k … k + count − 1 of an array; a partial batch is padded with zeros (harmless in
    // every kernel, and its lanes are never stored). Built in registers from scalar loads: a
    // vector load of lanes just stored one by one would wait for those stores (no store-to-load
    // forwarding).
    template <bool Full>
    static B load(const double* p, std::size_t k, std::size_t count) {
        if constexpr (Full) {
            return B::load_unaligned(p + k);
        } else {
            const M real = lane_index(std::make_index_sequence<W>()) < B(static_cast<double>(count));
            return xsimd::select(real, first_lanes(p + k, count, std::make_index_sequence<W>()), B(0.0));
        }
    }
    template <std::size_t... L>
    static B lane_index(std::index_sequence<L...>) {
        return B{static_cast<double>(L)...};
    }
    // Lanes p[0 … count − 1], then copies of p[0] (only addresses inside the array are read).
    template <std::size_t... L>
    static B first_lanes(const double* p, std::size_t count, std::index_sequence<L...>) {
        return B{p[L < count ? L : 0]...};
    }
    template <bool Full>
    static void store(const B& b, double* p, std::size_t k, std::size_t count) {
        if constexpr (Full) {
            b.store_unaligned(p + k);
        } else {
            alignas(64) double lane[W];
            b.store_aligned(lane);
            for (std::size_t i = 0; i < count; ++i) p[k + i] = lane[i];
        }
    }

    // first_closing_quadratic(), lane by lane, with the same bits.
    //
    // The scalar code divides twice (roots r1 = q / c2, r2 = c0 / q) and keeps the smaller root
    // of a convex gap, the larger of a concave one. Divisions and square roots are the bottleneck
    // of this kernel (a 512-bit divide costs about four scalar ones, bench/LOG.md), so it divides
    // once where it can prove which root the scalar code keeps: with the computed q,
    // q² ≥ c1²/4 = c0 c2 + D/4 (D = c1² − 4 c0 c2 exactly), so when D > 0 the exact roots satisfy
    // r1 − r2 = (q² − c0 c2) / (q c2) with the sign of q c2, the kept root is c0 / q for q > 0
    // and q / c2 for q < 0, and rounding (monotone) cannot reorder them. D > 0 is certain when
    // the computed discriminant exceeds 2⁻⁵⁰ (c1² + |4 c2 c0|), four times its rounding error
    // bound. Lanes that are not certain (a near-double root: grazing contacts; non-finite input)
    // or whose root is zero (signed zeros) make the batch take the two-division path.
    struct Discriminant {
        B disc;     // c1² − 4 c2 c0 as computed
        B certain;  // disc above it: D > 0 for sure
    };
    [[gnu::always_inline]] static Discriminant discriminant(const B& c0, const B& c1, const B& c2) {
        const B c1c1 = c1 * c1, c2c0 = B(4.0) * c2 * c0;
        return {c1c1 - c2c0, B(0x1p-50) * (c1c1 + xsimd::abs(c2c0)) + B(0x1p-1020)};
    }
    [[gnu::always_inline]] static B first_closing(const B& c0, const B& c1, const B& c2,
                                                  const B& horizon) {
        const B zero(0.0);
        // The common batch of squared distances: every gap open (c0 > 0) and convex (c2 > 0), as
        // between balls that do not touch and do not move alike. Such a gap closes only while
        // closing now (c1 < 0) through a real root (disc ≥ 0), at c0 / q with q > 0 (so +0 when
        // it underflows, as the scalar smaller root). Half the instructions of the general path,
        // which takes over when a lane is not certain.
        if (xsimd::all((c0 > zero) & (c2 > zero))) {
            const auto [disc, certain] = discriminant(c0, c1, c2);
            const M closing = (c1 < zero) & (disc >= zero);
            if (!xsimd::any(closing)) return B(kNever);
            if (!xsimd::any(closing & ~(disc > certain))) {
                // −0.5 (c1 + copysign(√disc, c1)) with c1 < 0, bit for bit.
                const B root = c0 / (B(-0.5) * (c1 - xsimd::sqrt(disc)));
                return xsimd::select(closing & (root <= horizon), root, B(kNever));
            }
        }
        return first_closing_general(c0, c1, c2, horizon);
    }
    // Any gap (open or closed, convex, linear or concave), for which the test above does not pay.
    [[gnu::always_inline]] static B first_closing_general(const B& c0, const B& c1, const B& c2,
                                                          const B& horizon) {
        const B zero(0.0);
        const M closed = c0 <= zero;
        const M now = closed & ((c1 < zero) | ((c1 == zero) & (c2 < zero)));
        const M linear = c2 == zero;
        B t = zero;
        M ok(false);
        if (xsimd::any(linear & ~now)) {
            // c2 = 0: an open gap closing at a constant rate.
            t = xsimd::select(linear, -c0 / c1, t);
            ok = linear & ~closed & ~(c1 >= zero);
        }
        const auto [disc, certain] = discriminant(c0, c1, c2);
        const M solve = ~linear & ~now & ~(disc < zero);
        if (xsimd::any(solve)) {
            const B q = B(-0.5) * (c1 + xsimd::copysign(xsimd::sqrt(disc), c1));
            const M q_positive = q > zero;
            B root = xsimd::select(q_positive, c0, q) / xsimd::select(q_positive, q, c2);
            if (xsimd::any(solve & (~(disc > certain) | (root == zero)))) {
                const B r1 = q / c2, r2 = c0 / q;  // std::min / std::max argument order
                root = xsimd::select(c2 > zero, xsimd::select(r2 < r1, r2, r1),
                                     xsimd::select(r1 < r2, r2, r1));
            }
            t = xsimd::select(solve, root, t);
            ok = ok | (solve & ~(q == zero) & ((closed & (root > zero)) | (~closed & ~(root < zero))));
        }
        // A closed gap pulled back before it could open closes again at its maximum.
        const M pulled = closed & ~now & (c2 < zero) & (disc < zero);
        if (xsimd::any(pulled)) {
            t = xsimd::select(pulled, -c1 / (B(2.0) * c2), t);
            ok = ok | pulled;
        }
        ok = ok & (t <= horizon);
        return xsimd::select(now, zero, xsimd::select(ok, t, B(kNever)));
    }

    // ---- the quartic: first_closing_polynomial() ----------------------------------------------
    // Degree-four lanes follow the scalar solver's path with masks: closing now, Cauchy's bound,
    // the critical points from the derivative (its own critical points from a quadratic), the
    // monotone pieces, and the safeguarded Newton/bisection steps, each lane's branches taken as
    // the scalar code takes them. A refinement iterates until the batch's slowest lane is done
    // (the others idle meanwhile); the three pieces of the cubic are refined together.

    // a != b for masks. Not a ^ b: xsimd 8.1 computes ^ of AVX-512 masks as a | b
    // (xtensor-stack/xsimd#1158, fixed upstream in 2025, after Debian 12's 8.1).
    static M differ(const M& a, const M& b) { return (a & ~b) | (~a & b); }
    template <int D>
    static B horner(const B* p, const B& t) {  // evaluate()
        B value = p[D];
        for (int k = D - 1; k >= 0; --k) value = value * t + p[k];
        return value;
    }
    template <int D>
    static B evaluation_error(const B* p, const B& t) {  // evaluation_error()
        const B magnitude = xsimd::abs(t);
        B sum = xsimd::abs(p[D]);
        for (int k = D - 1; k >= 0; --k) sum = sum * magnitude + xsimd::abs(p[k]);
        return B(2.0 * D * 0x1p-53) * sum;
    }
    static M zero_within(const B& value, const B& error) {  // zero_within()
        return (xsimd::abs(value) <= error) & (error < B(kNever));
    }
    // refine_root(p, D, lo[j], hi[j]) in the lanes of lanes[j], for K brackets at once: their
    // iterations are independent chains of dependent operations (Horner, a division) that the
    // CPU overlaps. dp[k − 1] = p[k] · k.
    template <int D, std::size_t K>
    static std::array<B, K> refine_roots(const B* p, const B* dp, std::array<B, K> lo, std::array<B, K> hi,
                                         const std::array<M, K>& lanes) {
        const B zero(0.0), half(0.5);
        std::array<B, K> flo, fhi, root, t;
        std::array<M, K> done, rising;
        auto all_done = [&] {
            for (const M& m : done)
                if (!xsimd::all(m)) return false;
            return true;
        };
        // The end of the bracket where |p| is smaller.
        auto closer = [&](std::size_t j) {
            return xsimd::select(xsimd::abs(flo[j]) < xsimd::abs(fhi[j]), lo[j], hi[j]);
        };
        for (std::size_t j = 0; j < K; ++j) {
            flo[j] = horner<D>(p, lo[j]);
            fhi[j] = horner<D>(p, hi[j]);
            done[j] = ~lanes[j];
            const M at_lo = ~done[j] & (flo[j] == zero);
            root[j] = xsimd::select(at_lo, lo[j], zero);
            done[j] = done[j] | at_lo;
            const M at_hi = ~done[j] & (fhi[j] == zero);
            root[j] = xsimd::select(at_hi, hi[j], root[j]);
            done[j] = done[j] | at_hi;
            rising[j] = flo[j] < zero;
            t[j] = half * (lo[j] + hi[j]);
        }
        for (int iteration = 0; iteration < 200 && !all_done(); ++iteration) {
            for (std::size_t j = 0; j < K; ++j) {
                if (xsimd::all(done[j])) continue;
                const B f = horner<D>(p, t[j]);
                const M hit = ~done[j] & zero_within(f, evaluation_error<D>(p, t[j]));
                root[j] = xsimd::select(hit, t[j], root[j]);
                done[j] = done[j] | hit;
                const M above = differ(f < zero, rising[j]);  // t becomes hi
                const M to_lo = ~done[j] & ~above, to_hi = ~done[j] & above;
                lo[j] = xsimd::select(to_lo, t[j], lo[j]);
                flo[j] = xsimd::select(to_lo, f, flo[j]);
                hi[j] = xsimd::select(to_hi, t[j], hi[j]);
                fhi[j] = xsimd::select(to_hi, f, fhi[j]);
                B df = dp[D - 1];
                for (int k = D - 1; k >= 1; --k) df = df * t[j] + dp[k - 1];
                B next = xsimd::select(~(df == zero), t[j] - f / df, lo[j]);
                next = xsimd::select((next > lo[j]) & (next < hi[j]), next, half * (lo[j] + hi[j]));
                const M narrow = ~done[j] & ((next <= lo[j]) | (next >= hi[j]));  // one ulp wide
                root[j] = xsimd::select(narrow, closer(j), root[j]);
                done[j] = done[j] | narrow;
                t[j] = next;
            }
        }
        for (std::size_t j = 0; j < K; ++j) root[j] = xsimd::select(done[j], root[j], closer(j));
        return root;
    }
    // Per lane, list[count] = t and ++count where `when` (a root or edge appended in the scalar
    // code's order); the counts are small whole numbers held as doubles.
    template <std::size_t N>
    static void append(std::array<B, N>& list, B& count, const M& when, const B& t) {
        for (std::size_t j = 0; j < N; ++j)
            list[j] = xsimd::select(when & (count == B(static_cast<double>(j))), t, list[j]);
        count = xsimd::select(when, count + B(1.0), count);
    }
    // first_closing_quartic()'s steps, inlined into it.
    // closing_now(): the first non-zero derivative at τ = 0 is negative.
    [[gnu::always_inline]] static M closing_now(const std::array<B, 5>& p) {
        const B zero(0.0);
        return (p[1] < zero) | (~(p[1] > zero) & ((p[2] < zero) | (~(p[2] > zero) &
                                                                    ((p[3] < zero) | (~(p[3] > zero) & (p[4] < zero))))));
    }
    // Where the search for a root ends: std::min(horizon, root_bound()), root_bound() being
    // 1 + max |p_k / p_4| (std::max keeps the first argument unless less).
    [[gnu::always_inline]] static B search_end(const std::array<B, 5>& p, double horizon) {
        const B zero(0.0), one(1.0);
        B bound = zero;
        for (std::size_t k = 0; k < 4; ++k) {
            const B x = xsimd::abs(p[k] / p[4]);
            bound = xsimd::select(bound < x, x, bound);
        }
        bound = one + bound;
        return xsimd::select(bound < B(horizon), bound, B(horizon));
    }
    // No root in [0, end] where p(τ) >= p0 − Σ |p_k| end^k stays clearly positive (a pair too far
    // apart to meet before the earliest impact found so far): the root isolation would find none
    // either.
    [[gnu::always_inline]] static M out_of_reach(const std::array<B, 5>& p, const B& end) {
        const B zero(0.0), one(1.0);
        B reach = zero, power = one;
        for (std::size_t k = 1; k <= 4; ++k) {
            power = power * end;
            reach = reach + xsimd::abs(p[k]) * power;
        }
        return p[0] > reach * B(1.0 + 1e-9);
    }
    // The derivative of the polynomial p: p[k] · k.
    template <std::size_t N>
    [[gnu::always_inline]] static std::array<B, N - 1> derivative(const std::array<B, N>& p) {
        std::array<B, N - 1> d;
        for (std::size_t k = 1; k < N; ++k) d[k - 1] = p[k] * B(static_cast<double>(k));
        return d;
    }
    // The edges of the cubic's monotone pieces, `count` of them per lane (lanes not `done`): 0,
    // the roots of its derivative dd in [0, end] ascending, end.
    [[gnu::always_inline]] static std::array<B, 4> cubic_edges(const std::array<B, 3>& dd, const B& end, const M& done,
                                                               B& count) {
        const B zero(0.0);
        std::array<B, 4> edges{zero, zero, zero, zero};
        const B disc = dd[1] * dd[1] - B(4.0) * dd[2] * dd[0];
        const B q = B(-0.5) * (dd[1] + xsimd::copysign(xsimd::sqrt(disc), dd[1]));
        const B r0 = q / dd[2], r1 = xsimd::select(~(q == zero), dd[0] / q, zero);
        const M swap = r0 > r1, real = ~done & ~(disc < zero);
        for (const B& r : {xsimd::select(swap, r1, r0), xsimd::select(swap, r0, r1)})
            append(edges, count, real & (r >= zero) & (r <= end), r);
        append(edges, count, ~done, end);
        return edges;
    }
    // The edges of the quartic's monotone pieces, `count` of them per lane (lanes not `done`): 0,
    // the roots of its derivative d in [0, end] ascending (roots_in()), end; found on the pieces
    // of d between its `n_cubic` edges `cubic`, whose brackets are refined together, then the
    // roots appended in the scalar order. (The scalar code evaluates each inner edge twice, as
    // the end of one piece and the start of the next: the same value.)
    [[gnu::always_inline]] static std::array<B, 6> quartic_edges(const std::array<B, 4>& d, const std::array<B, 3>& dd,
                                                                 const std::array<B, 4>& cubic, const B& n_cubic,
                                                                 const M& done, const B& end, B& count) {
        const B zero(0.0), one(1.0);
        std::array<B, 6> edges{zero, zero, zero, zero, zero, zero};
        B last = zero;  // the last root appended
        auto add = [&](const M& when, const B& t) {
            append(edges, count, when, t);
            last = xsimd::select(when, t, last);
        };
        constexpr std::size_t kCubicPieces = 3;
        std::array<B, kCubicPieces + 1> f_cubic;
        for (std::size_t e = 0; e < cubic.size(); ++e) f_cubic[e] = horner<3>(d.data(), cubic[e]);
        std::array<M, kCubicPieces> in_piece, crossing;
        for (std::size_t e = 0; e < kCubicPieces; ++e) {
            const B &fa = f_cubic[e], &fb = f_cubic[e + 1];
            in_piece[e] = ~done & (B(static_cast<double>(e + 1)) < n_cubic);
            crossing[e] = in_piece[e] & ~(fa == zero) & differ(fa < zero, fb < zero) & ~(fb == zero);
        }
        const std::array<B, kCubicPieces> roots = refine_roots<3>(
            d.data(), dd.data(), {cubic[0], cubic[1], cubic[2]}, {cubic[1], cubic[2], cubic[3]}, crossing);
        for (std::size_t e = 0; e < kCubicPieces; ++e) {
            const B a = cubic[e], b = cubic[e + 1];
            add(in_piece[e] & (f_cubic[e] == zero) & ((count == one) | ~(last == a)), a);
            add(crossing[e], roots[e]);
            add(in_piece[e] & (B(static_cast<double>(e + 2)) == n_cubic) & (f_cubic[e + 1] == zero), b);
        }
        append(edges, count, ~done, end);
        return edges;
    }
    // first_closing_polynomial() in the lanes of `lanes`, all of degree four (p[4] ≠ 0).
    [[gnu::noinline]] static B first_closing_quartic(const std::array<B, 5>& p, double horizon, const M& lanes) {
        const B zero(0.0), one(1.0);
        B result(kNever);
        M done = ~lanes;
        const M now = ~done & (p[0] <= zero) & closing_now(p);
        result = xsimd::select(now, zero, result);
        done = done | now;
        const B end = search_end(p, horizon);
        done = done | ~(end > zero);
        done = done | out_of_reach(p, end);
        if (xsimd::all(done)) return result;

        // The derivative d (a cubic) and its derivative dd (a quadratic).
        const std::array<B, 4> d = derivative(p);
        const std::array<B, 3> dd = derivative(d);
        B n_cubic = one, n_edges = one;
        const std::array<B, 4> cubic = cubic_edges(dd, end, done, n_cubic);
        const std::array<B, 6> edges = quartic_edges(d, dd, cubic, n_cubic, done, end, n_edges);
        // The first piece that starts open and ends closed holds the impact, or touches zero at
        // its end within rounding error; a closed gap that never opened closes again where it
        // turns back.
        B lo = zero, hi = zero;
        M closes(false);
        for (std::size_t e = 0; e + 1 < edges.size(); ++e) {
            const M piece = ~done & (B(static_cast<double>(e + 1)) < n_edges);
            if (!xsimd::any(piece)) break;
            const B a = edges[e], b = edges[e + 1];
            const B fa = horner<4>(p.data(), a), fb = horner<4>(p.data(), b);
            const M open_closed = piece & (fa > zero) & (fb <= zero);
            lo = xsimd::select(open_closed, a, lo);
            hi = xsimd::select(open_closed, b, hi);
            closes = closes | open_closed;
            const M touches = piece & ~open_closed & (fa > zero) & zero_within(fb, evaluation_error<4>(p.data(), b));
            const M turns = piece & (fa <= zero) & (fb < fa);
            result = xsimd::select(touches, b, xsimd::select(turns, a, result));
            done = done | open_closed | touches | turns;
        }
        if (xsimd::any(closes))
            result = xsimd::select(closes, refine_roots<4, 1>(p.data(), d.data(), {lo}, {hi}, {closes})[0], result);
        return result;
    }
    // The lanes of degree three and four of t: quartics through first_closing_quartic(), cubics
    // (p[4] underflowed to zero) through the scalar solver, lane by lane. With two lanes (SSE2) the
    // masked quartic costs more than the scalar solver, so there every such lane takes the scalar
    // one.
    static constexpr bool kMaskedQuartic = W >= 4;
    // Lanes of degree three or four (degree_of() > 2; ~(x == 0) as in ball_ball_chunk()).
    static M above_quadratic(const std::array<B, 5>& p) {
        const B zero(0.0);
        return ~(p[4] == zero) | ~(p[3] == zero);
    }
    static B higher_degrees(const std::array<B, 5>& p, double horizon, B t) {
        const B zero(0.0);
        const M higher = above_quadratic(p);
        M masked(false);
        if constexpr (kMaskedQuartic) {
            masked = ~(p[4] == zero);
            if (xsimd::any(masked)) t = xsimd::select(masked, first_closing_quartic(p, horizon, masked), t);
        }
        if (xsimd::any(higher & ~masked)) t = scalar_polynomial(p, horizon, t);
        return t;
    }
    // first_closing_polynomial() per lane, any degree.
    static B first_closing_any(const std::array<B, 5>& p, double horizon) {
        const B zero(0.0);
        const M higher = above_quadratic(p);
        B t = zero;
        if (!xsimd::all(higher)) t = first_closing(p[0], p[1], p[2], B(horizon));
        return xsimd::any(higher) ? higher_degrees(p, horizon, t) : t;
    }
    // t with its cubic lanes, and with its quartic lanes unless kMaskedQuartic, solved by
    // first_closing_polynomial() one by one. Out of line: rarely needed.
    [[gnu::noinline]] static B scalar_polynomial(const std::array<B, 5>& p, double horizon, const B& t) {
        alignas(64) double c[5][W], lane[W];
        for (std::size_t k = 0; k < 5; ++k) p[k].store_aligned(c[k]);
        t.store_aligned(lane);
        for (std::size_t i = 0; i < W; ++i)
            if ((c[4][i] != 0.0 && !kMaskedQuartic) || (c[4][i] == 0.0 && c[3][i] != 0.0))
                lane[i] = first_closing_polynomial({c[0][i], c[1][i], c[2][i], c[3][i], c[4][i]}, horizon);
        return B::load_aligned(lane);
    }
    // squared_gap(): the coefficients of |w0 + w1 τ + w2 τ²|² − ρ².
    [[gnu::always_inline]] static std::array<B, 5> squared_gap(const B& w0x, const B& w0y, const B& w0z,
                                                               const B& w1x, const B& w1y, const B& w1z,
                                                               const B& w2x, const B& w2y, const B& w2z,
                                                               const B& rho) {
        const B two(2.0);
        return {(w0x * w0x + w0y * w0y + w0z * w0z) - rho * rho, two * (w0x * w1x + w0y * w1y + w0z * w1z),
                (w1x * w1x + w1y * w1y + w1z * w1z) + two * (w0x * w2x + w0y * w2y + w0z * w2z),
                two * (w1x * w2x + w1y * w2y + w1z * w2z), w2x * w2x + w2y * w2y + w2z * w2z};
    }
    template <bool Full>
    [[gnu::always_inline]] static std::array<B, 5> gap(const PolynomialPointers& l, std::size_t k, std::size_t count) {
        return {load<Full>(l.p0, k, count), load<Full>(l.p1, k, count), load<Full>(l.p2, k, count),
                load<Full>(l.p3, k, count), load<Full>(l.p4, k, count)};
    }
    // first_closing_polynomial() of each lane's gap (formed by gap()): quadratics here, the
    // other lanes out of line, where gap() forms them again (this keeps the quadratic path's
    // registers and frame lean).
    template <bool Full, class Pointers>
    [[gnu::always_inline]] static B first_closing_chunk(const Pointers& l, std::size_t k, std::size_t count,
                                                        double horizon) {
        const std::array<B, 5> p = gap<Full>(l, k, count);
        const B zero(0.0);
        const M higher = above_quadratic(p);
        B t = zero;
        if (!xsimd::all(higher)) t = first_closing(p[0], p[1], p[2], B(horizon));
        if (xsimd::any(higher)) t = xsimd::select(higher, first_closing_higher<Full>(l, k, count, horizon), t);
        return t;
    }
    template <bool Full, class Pointers>
    [[gnu::noinline]] static B first_closing_higher(const Pointers& l, std::size_t k, std::size_t count,
                                                    double horizon) {
        return higher_degrees(gap<Full>(l, k, count), horizon, B(0.0));
    }
    // The kernel of lanes whose gaps gap() forms: polynomial (the coefficients themselves).
    template <class Pointers>
    static void gaps(const Pointers& l, std::size_t n, double horizon, double* out) {
        std::size_t k = 0;
        for (; k + W <= n; k += W) store<true>(first_closing_chunk<true>(l, k, W, horizon), out, k, W);
        if (k < n) store<false>(first_closing_chunk<false>(l, k, n - k, horizon), out, k, n - k);
    }

    // ---- ball–ball: toi_ball_ball() ---------------------------------------------------------
    // Its quadratic case (da = 0).
    [[gnu::always_inline]] static B pair_quadratic(const B& dpx, const B& dpy, const B& dpz, const B& dvx,
                                                   const B& dvy, const B& dvz, const B& sigma, double horizon) {
        const B c0 = (dpx * dpx + dpy * dpy + dpz * dpz) - sigma * sigma;
        const B c1 = B(2.0) * (dpx * dvx + dpy * dvy + dpz * dvz);
        const B c2 = dvx * dvx + dvy * dvy + dvz * dvz;
        return first_closing(c0, c1, c2, B(horizon));
    }
    template <bool Full>
    static void ball_ball_chunk(const PairPointers& l, std::size_t k, std::size_t count,
                                double horizon, double* out) {
        const B dpx = load<Full>(l.dpx, k, count), dpy = load<Full>(l.dpy, k, count),
                dpz = load<Full>(l.dpz, k, count);
        const B dvx = load<Full>(l.dvx, k, count), dvy = load<Full>(l.dvy, k, count),
                dvz = load<Full>(l.dvz, k, count);
        const B dax = load<Full>(l.dax, k, count), day = load<Full>(l.day, k, count),
                daz = load<Full>(l.daz, k, count);
        const B sigma = load<Full>(l.sigma, k, count);
        const B zero(0.0);
        // The scalar da == 0 test per lane: the bits of dax | day | daz are those of ±0 only when
        // all three are ±0 (a NaN or any other value leaves bits beside the sign).
        const M quadratic = (dax | day | daz) == zero;
        B t = zero;
        if (xsimd::any(quadratic)) t = pair_quadratic(dpx, dpy, dpz, dvx, dvy, dvz, sigma, horizon);
        if (!xsimd::all(quadratic)) t = xsimd::select(quadratic, t, pair_quartic<Full>(l, k, count, horizon));
        store<Full>(t, out, k, count);
    }
    // Relative acceleration: the quartic of squared_gap(dp, dv, da / 2, σ). Out of line, reloading
    // its lanes, so that the quadratic path above keeps its registers.
    template <bool Full>
    [[gnu::noinline]] static B pair_quartic(const PairPointers& l, std::size_t k, std::size_t count, double horizon) {
        const B half(0.5);
        return first_closing_any(
            squared_gap(load<Full>(l.dpx, k, count), load<Full>(l.dpy, k, count), load<Full>(l.dpz, k, count),
                        load<Full>(l.dvx, k, count), load<Full>(l.dvy, k, count), load<Full>(l.dvz, k, count),
                        load<Full>(l.dax, k, count) * half, load<Full>(l.day, k, count) * half,
                        load<Full>(l.daz, k, count) * half, load<Full>(l.sigma, k, count)),
            horizon);
    }
    static void ball_ball(const PairPointers& l, std::size_t n, double horizon, double* out) {
        std::size_t k = 0;
        for (; k + W <= n; k += W) ball_ball_chunk<true>(l, k, W, horizon, out);
        if (k < n) ball_ball_chunk<false>(l, k, n - k, horizon, out);
    }

    // ---- one ball against its neighbours: toi_neighbours_batch() -----------------------------
    // Lanes column[slot[0]], column[slot[1]] … built in registers: scalar loads, which beat the
    // gather instructions (microcoded on AMD Zen) at these widths.
    template <std::size_t... L>
    static B gather(const double* column, const std::uint32_t* slot, std::index_sequence<L...>) {
        return B{column[slot[L]]...};
    }
    static B gather(const double* column, const std::uint32_t* slot) {
        return gather(column, slot, std::make_index_sequence<W>());
    }
    template <bool Full>
    static void neighbours_chunk(const MoverState& m, const NeighbourPointers& l, std::size_t k,
                                 std::size_t count, double horizon, double* out) {
        // A partial chunk repeats its first slot in the padding lanes (never stored).
        std::uint32_t padded[W];
        const std::uint32_t* slot = l.slot + k;
        if constexpr (!Full) {
            for (std::size_t i = 0; i < W; ++i) padded[i] = slot[i < count ? i : 0];
            slot = padded;
        }
        const B tau = B(m.now) - gather(l.t, slot);
        // Balls::position_at(): x + (vx + 0.5 a τ) τ, minus the mover's, plus the image shift;
        // velocity_at(): vx + a τ, minus the mover's.
        auto axis = [&](const double* x, const double* v, const double* shift, double p0, double v0, double a,
                        B& dp, B& dv) {
            const B vj = gather(v, slot);
            // Without shifts + 0.0 all the same, as the scalar code adds a zero shift (−0 + 0 = +0).
            dp = ((gather(x, slot) + (vj + B(0.5 * a) * tau) * tau) - B(p0)) +
                 (shift ? load<Full>(shift, k, count) : B(0.0));
            dv = (vj + B(a) * tau) - B(v0);
        };
        B dpx, dpy, dpz, dvx, dvy, dvz;
        axis(l.x, l.vx, l.sx, m.px, m.vx, m.ax, dpx, dvx);
        axis(l.y, l.vy, l.sy, m.py, m.vy, m.ay, dpy, dvy);
        axis(l.z, l.vz, l.sz, m.pz, m.vz, m.az, dpz, dvz);
        const B sigma = B(m.r) + gather(l.radius, slot);
        store<Full>(pair_quadratic(dpx, dpy, dpz, dvx, dvy, dvz, sigma, horizon), out, k, count);
    }
    static void neighbours(const MoverState& m, const NeighbourPointers& l, std::size_t n, double horizon,
                           double* out) {
        std::size_t k = 0;
        for (; k + W <= n; k += W) neighbours_chunk<true>(m, l, k, W, horizon, out);
        if (k < n) neighbours_chunk<false>(m, l, k, n - k, horizon, out);
    }

    // ---- ray–sphere: ray_sphere() -----------------------------------------------------------
    template <bool Full>
    static void ray_sphere_chunk(const B (&o)[3], const B (&d)[3], const B& dd, const SpherePointers& l,
                                 std::size_t k, std::size_t count, double* out) {
        const B ocx = load<Full>(l.cx, k, count) - o[0], ocy = load<Full>(l.cy, k, count) - o[1],
                ocz = load<Full>(l.cz, k, count) - o[2];
        const B r = load<Full>(l.radius, k, count);
        const B c = (ocx * ocx + ocy * ocy + ocz * ocz) - r * r;
        const B b = ocx * d[0] + ocy * d[1] + ocz * d[2];
        const B disc = b * b - dd * c;
        const B zero(0.0);
        const M inside = c <= zero, miss = (b <= zero) | (disc < zero);
        B t(-1.0);
        if (xsimd::any(~inside & ~miss)) t = xsimd::select(miss, t, c / (b + xsimd::sqrt(disc)));
        store<Full>(xsimd::select(inside, zero, t), out, k, count);
    }
    static void ray_sphere(Vec3 origin, Vec3 direction, const SpherePointers& l, std::size_t n,
                           double* out) {
        const B o[3] = {B(origin.x), B(origin.y), B(origin.z)};
        const B d[3] = {B(direction.x), B(direction.y), B(direction.z)};
        const B dd(direction.x * direction.x + direction.y * direction.y + direction.z * direction.z);
        std::size_t k = 0;
        for (; k + W <= n; k += W) ray_sphere_chunk<true>(o, d, dd, l, k, W, out);
        if (k < n) ray_sphere_chunk<false>(o, d, dd, l, k, n - k, out);
    }

    // ---- end-of-step state: what Balls::advance() would store ---------------------------------
    template <bool Full>
    static void state_at_chunk(const MotionPointers& l, const B& T, std::size_t k, std::size_t count) {
        const B t = load<Full>(l.t, k, count);
        const M keep = t == T;  // advance() leaves a ball already at T untouched
        const B tau = T - t;
        const B half(0.5);
        auto axis = [&](const double* p, const double* v, const double* a, double* to_p, double* to_v) {
            const B p0 = load<Full>(p, k, count), v0 = load<Full>(v, k, count), a0 = load<Full>(a, k, count);
            // position_at(): p + (v + 0.5 a τ) τ; velocity_at(): v + a τ.
            store<Full>(xsimd::select(keep, p0, p0 + (v0 + half * a0 * tau) * tau), to_p, k, count);
            store<Full>(xsimd::select(keep, v0, v0 + a0 * tau), to_v, k, count);
        };
        axis(l.x, l.vx, l.ax, l.to_x, l.to_vx);
        axis(l.y, l.vy, l.ay, l.to_y, l.to_vy);
        axis(l.z, l.vz, l.az, l.to_z, l.to_vz);
    }
    static void state_at(const MotionPointers& l, double T, std::size_t begin, std::size_t end) {
        const B time(T);
        std::size_t k = begin;
        for (; k + W <= end; k += W) state_at_chunk<true>(l, time, k, W);
        if (k < end) state_at_chunk<false>(l, time, k, end - k);
    }
};

template <class Arch>
constexpr SimdTable make_simd_table() {
    using Impl = SimdImpl<Arch>;
    return {Arch::name(),
            Impl::W,
            &Impl::ball_ball,
            &Impl::neighbours,
            &Impl::template gaps<PolynomialPointers>,
            &Impl::ray_sphere,
            &Impl::state_at};
}

}  // namespace ballistic::detail
