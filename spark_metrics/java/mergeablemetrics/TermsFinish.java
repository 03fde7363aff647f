package mergeablemetrics;

import java.math.BigInteger;

/**
 * The finish of the regression-term metrics from a {@code regression_terms} state's bytes (single output), bit for
 * bit core's values (core/metrics/regression_terms.py {@code _TermMetric}): NaN without weight or with rows outside
 * the term's domain; NaN / {@code +-inf} where rows' terms are not finite (as scikit-learn's float sum); else the
 * exact sum over the exact weight rounded once ({@link RegressionFinish.Q#toDouble}, Python's {@code int / int});
 * {@code rmsle} its square root where finite; a metric with a {@code multioutput} parameter passes through core's
 * {@code combine_outputs} ({@code (0.0 + v) / 1}).
 *
 * <p>Description (see {@link Finish}): {@code term,i,-1,0,j,sqrt,averaged}: term {@code j} of the layout, {@code sqrt}
 * 1 for {@code rmsle}, {@code averaged} 1 for a {@code multioutput} metric.
 */
final class TermsFinish {
    private TermsFinish() {}

    /** The exact value of term {@code j} of the (T,) exact-sum field {@code sums}. */
    static RegressionFinish.Q term(StateReader.State st, int j) {
        double[] values = st.doubles("sums");
        long[] limbs = st.longs("sums.limbs");
        if (limbs.length == 0) return RegressionFinish.Q.of(values[j]);
        int per = limbs.length / values.length;
        long exp = st.longs("sums.exp")[0];
        BigInteger s = BigInteger.ZERO;
        for (int i = per - 1; i >= 0; i--) s = s.shiftLeft(32).add(BigInteger.valueOf(limbs[j * per + i]));
        return RegressionFinish.Q.dyadic(s, 32L * exp);
    }

    static double value(StateReader.State st, int j, boolean sqrt, boolean averaged) {
        double v = st == null ? Double.NaN : raw(st, j, sqrt);
        return averaged ? (0.0 + v) / 1.0 : v;
    }

    private static double raw(StateReader.State st, int j, boolean sqrt) {
        if (st.doubles("weight")[0] == 0 || st.longs("outside")[j] != 0) return Double.NaN;
        long pos = st.longs("posinf")[j], neg = st.longs("neginf")[j], nan = st.longs("nan")[j];
        double v;
        if (nan != 0 || (pos != 0 && neg != 0)) v = Double.NaN;
        else if (pos != 0) v = Double.POSITIVE_INFINITY;
        else if (neg != 0) v = Double.NEGATIVE_INFINITY;
        else v = term(st, j).div(RegressionFinish.field(st, "weight")).toDouble();
        return sqrt && Double.isFinite(v) ? Math.sqrt(v) : v;
    }
}
