package mergeablemetrics;

/**
 * The finish of the binary ranking and probability metrics from a state's bytes, with the same IEEE
 * operations in the same order as core's Python finish (core/metrics/ranking.py, core/metrics/calibration.py),
 * so each value is bit for bit core's:
 * <ul>
 * <li>{@code roc_auc}: {@code roc_auc_value} of a {@code score_distribution} state: scikit-learn's
 * {@code roc_curve} (drop_intermediate) and trapezoid on the cumulative bin weights. Beyond the capacity
 * (a compressed state, level &gt; 0) core clamps the trapezoid into its certified bounds widened by 1e-12;
 * those bounds are sums core takes with {@code np.einsum}, whose order depends on the CPU, so here the
 * bounds are summed exactly and the clamp is decided only where numpy's rounding of them cannot change
 * it: otherwise (the value within numpy's worst-case rounding error of a bound) the result is null;</li>
 * <li>{@code average_precision}: {@code average_precision_value} of an exact state; null for a compressed
 * one (core's estimate there calls numpy's {@code log1p} and {@code x**3}, the platform's libm or SIMD
 * code, which Java cannot reproduce bit for bit);</li>
 * <li>{@code log_loss}, {@code brier_score}: the probability sums over the weight (NaN for weight 0).</li>
 * <li>compressed {@code roc_auc} whose largest bin weight lies outside [2^-300, 2^300]: null (core rescales).</li>
 * <li>a total weight beyond float64 (weights summing past 1.8e308): NaN, as core (not 0.0).</li>
 * </ul>
 */
final class RankingFinish {
    private RankingFinish() {}

    private static final double SLACK = 1e-12;
    private static final double U = 0x1p-53;
    private static final double HUGE = 0x1p300, TINY = 0x1p-300;

    /** Per-bin weights in descending score order and their cumulative sums (core's {@code _Dist}). */
    static final class Dist {
        int m;
        boolean exact = true;
        double[] pos = new double[0], neg = new double[0], tps = new double[0], fps = new double[0];
        double P, N;
    }

    static Dist dist(StateReader.State st) {
        Dist d = new Dist();
        if (st == null) return d;
        double[] pos = st.doubles("pos"), neg = st.doubles("neg");
        d.exact = st.longs("level")[0] == 0;
        int n = pos.length, m = 0;
        for (int i = 0; i < n; i++) if (pos[i] + neg[i] > 0) m++;
        d.m = m;
        d.pos = new double[m];
        d.neg = new double[m];
        for (int i = n - 1, at = 0; i >= 0; i--) {
            if (!(pos[i] + neg[i] > 0)) continue; // bins without weight are no thresholds
            d.pos[at] = pos[i];
            d.neg[at++] = neg[i];
        }
        d.tps = cumsum(d.pos);
        d.fps = cumsum(d.neg);
        d.P = m > 0 ? d.tps[m - 1] : 0.0;
        d.N = m > 0 ? d.fps[m - 1] : 0.0;
        return d;
    }

    /** {@code np.cumsum}: a running sum. */
    static double[] cumsum(double[] a) {
        double[] out = new double[a.length];
        for (int i = 0; i < a.length; i++) out[i] = i == 0 ? a[0] : out[i - 1] + a[i];
        return out;
    }

    /** {@code roc_curve_arrays(d, True)}: {@code [fpr, tpr]}. */
    static double[][] rocCurve(Dist d) {
        double[] fps = d.fps, tps = d.tps;
        int m = d.m;
        int[] keep;
        if (m > 2) {
            int[] k = new int[m];
            int n = 0;
            k[n++] = 0;
            for (int i = 0; i < m - 2; i++) { // np.diff(x, 2)[i] = (x[i+2] - x[i+1]) - (x[i+1] - x[i])
                double df = (fps[i + 2] - fps[i + 1]) - (fps[i + 1] - fps[i]);
                double dt = (tps[i + 2] - tps[i + 1]) - (tps[i + 1] - tps[i]);
                if (df != 0 || dt != 0) k[n++] = i + 1; // NaN counts as nonzero, as numpy's truth value
            }
            k[n++] = m - 1;
            keep = java.util.Arrays.copyOf(k, n);
        } else {
            keep = new int[m];
            for (int i = 0; i < m; i++) keep[i] = i;
        }
        int n = keep.length + 1;
        double[] f = new double[n], t = new double[n];
        for (int i = 0; i < keep.length; i++) {
            f[i + 1] = fps[keep[i]];
            t[i + 1] = tps[keep[i]];
        }
        return new double[][] {rate(f), rate(t)};
    }

    private static double[] rate(double[] c) {
        double last = c[c.length - 1];
        double[] out = new double[c.length];
        for (int i = 0; i < c.length; i++) out[i] = last <= 0 ? Double.NaN : c[i] / last;
        return out;
    }

    /** {@code _sk_auc(x, y)}: scikit-learn's {@code auc} (the trapezoid, x monotonic). */
    static double skAuc(double[] x, double[] y) {
        int n = x.length;
        boolean anyNeg = false, allNonPos = true;
        for (int i = 0; i + 1 < n; i++) {
            double dx = x[i + 1] - x[i];
            if (dx < 0) anyNeg = true;
            if (!(dx <= 0)) allNonPos = false;
        }
        double direction = 1;
        if (anyNeg) {
            if (!allNonPos) throw new IllegalStateException("x is neither increasing nor decreasing");
            direction = -1;
        }
        double[] terms = new double[Math.max(n - 1, 0)];
        for (int i = 0; i + 1 < n; i++) terms[i] = (x[i + 1] - x[i]) * (y[i + 1] + y[i]) / 2.0;
        return direction * Finish.sum(terms);
    }

    /** ROC AUC (null: a compressed state whose clamp into core's bounds cannot be decided, see above). */
    static Double rocAuc(StateReader.State st) {
        Dist d = dist(st);
        if (d.P <= 0 || d.N <= 0) return Double.NaN;
        if (overflows(d)) return Double.NaN;
        double[][] roc = rocCurve(d);
        double v = skAuc(roc[0], roc[1]);
        if (d.exact) return v;
        // core rescales the weights by a power of two where the largest bin lies outside [2^-300, 2^300]
        // (_Dist.normalised: its products and P N would overflow or underflow): not reproduced here
        double top = 0;
        for (int i = 0; i < d.m; i++) top = Math.max(top, Math.max(d.pos[i], d.neg[i]));
        if (!(top >= TINY && top <= HUGE)) return null;
        // core: lower = pos . (N - fps), ties = pos . neg (np.einsum), pn = P N;
        // value = min(max(v, max(0, lower/pn - 1e-12)), min(1, (lower + ties)/pn + 1e-12))
        ExactSum lower = new ExactSum(), upper = new ExactSum();
        for (int i = 0; i < d.m; i++) {
            double below = d.N - d.fps[i];
            lower.addProduct(d.pos[i], below);
            upper.addProduct(d.pos[i], below);
            upper.addProduct(d.pos[i], d.neg[i]);
        }
        double pn = d.P * d.N, lo = lower.value(), hi = upper.value();
        if (!(Double.isFinite(pn) && pn > 0 && Double.isFinite(hi)) || Double.isNaN(v)) return null;
        // numpy's sums of m nonnegative products err by at most (m + 2) u of their value (Higham's gamma),
        // plus the roundings of the products, of lower + ties, the division and the subtraction
        double g = 1.01 * (d.m + 8) * U;
        double loRaw = lo / pn - SLACK, hiRaw = hi / pn + SLACK;
        double gLo = g * (lo / pn) + 4 * U, gHi = g * (hi / pn) + 4 * U;
        boolean aboveLower = v >= 0 && v > loRaw + gLo; // then max(0, core's lower) <= v
        if (!aboveLower) return null;
        if (v <= 1 && v < hiRaw - gHi) return v; // below core's upper: no clamp
        if (v > 1 && hiRaw - gHi > 1) return 1.0; // core's upper is min(1, ...) = 1
        return null;
    }

    /** Core's {@code _overflows}: a class's total weight beyond float64 (the value is undefined, NaN). */
    static boolean overflows(Dist d) {
        return !(Double.isFinite(d.P) && Double.isFinite(d.N));
    }

    /** Average precision (null for a compressed state, see above). */
    static Double averagePrecision(StateReader.State st) {
        Dist d = dist(st);
        if (d.m == 0) return Double.NaN;
        if (d.P <= 0) return 0.0;
        if (overflows(d)) return Double.NaN;
        if (!d.exact) return null;
        int m = d.m;
        double last = d.tps[m - 1];
        // pr_curve_arrays: precision and recall per bin (descending), reversed, then (1, 0) appended
        double[] precR = new double[m + 1], recR = new double[m + 1];
        for (int i = 0; i < m; i++) {
            double ps = d.tps[i] + d.fps[i];
            precR[m - 1 - i] = ps != 0 ? d.tps[i] / ps : 0.0;
            recR[m - 1 - i] = last == 0 ? 1.0 : d.tps[i] / last;
        }
        precR[m] = 1.0;
        recR[m] = 0.0;
        double[] terms = new double[m];
        for (int i = 0; i < m; i++) terms[i] = (recR[i + 1] - recR[i]) * precR[i];
        double x = -Finish.sum(terms);
        return x > 0.0 ? x : 0.0; // Python's max(0.0, x)
    }

    /** {@code log_loss}: the state's log-loss sum at eps index {@code e} over its weight. */
    static double logLoss(StateReader.State st, int e) {
        if (st == null) return Double.NaN;
        double w = st.doubles("weight")[0];
        return w == 0 || !Double.isFinite(w) ? Double.NaN : st.doubles("log_loss")[e] / w; // core's _mean_or_nan
    }

    /** {@code brier_score}: the state's Brier sum over its weight, times {@code scale}. */
    static double brier(StateReader.State st, double scale) {
        if (st == null) return Double.NaN;
        double w = st.doubles("weight")[0];
        return w == 0 || !Double.isFinite(w) ? Double.NaN : st.doubles("brier")[0] / w * scale;
    }
}
