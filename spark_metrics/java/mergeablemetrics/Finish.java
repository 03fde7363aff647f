package mergeablemetrics;

/**
 * Metric values from the states' bytes, computed with the same IEEE operations in the same order as core's
 * Python finish (numpy's reductions included: a sum is {@code 0 + pairwise(values)}, numpy's pairwise
 * summation; a column sum of a matrix adds its rows in order), so each value is bit for bit core's.
 *
 * <p>A metric is described by one comma-separated string the Python side builds
 * (spark_metrics/jvm_finish.py): {@code op,i,j,k,...} (state index i; j: the threshold index of a binary
 * confusion state, -1 for a K x K matrix; k: the matrix side, for a group without rows, whose states are zero):
 * <ul>
 * <li>{@code count,i}: example_count (the {@code count} field);</li>
 * <li>{@code prf,i,j,k,which,avg,fill,b2}: precision / recall / fbeta ({@code which} p, r, f), averaged
 * {@code binary|micro|macro|weighted}; {@code fill}: the value where undefined (zero_division);
 * {@code b2}: beta squared;</li>
 * <li>{@code acc,i,j,k}: accuracy; {@code bacc,i,j,k,adjusted}: balanced accuracy;</li>
 * <li>{@code rate,i,j,k,num,den1,den2,fill}: {@code num / (den1 + den2)} of the binary counts (tp, fp, tn, fn);</li>
 * <li>{@code roc,i,-1,0} and {@code ap,i,-1,0}: roc_auc and average_precision of a score distribution;
 * {@code ll,i,e,0}: log_loss at eps index e of a probability-sums state; {@code brier,i,-1,0,scale}: brier_score
 * ({@link RankingFinish}; null where that finish cannot give core's value bit for bit);</li>
 * <li>{@code reg,i,-1,0,metric,forceFinite,averaged}: a regression metric of a regression-moments state
 * ({@link RegressionFinish}: core's exact rationals, rounded once).</li>
 * <li>{@code term,i,-1,0,j,sqrt,averaged}: the mean of term j of a regression-terms state ({@link TermsFinish}).</li>
 * </ul>
 */
public final class Finish {
    private Finish() {}

    /** numpy's pairwise summation of {@code a[off, off+n)} (numpy/_core/src/umath/loops_utils.h). */
    static double pairwise(double[] a, int off, int n) {
        if (n < 8) {
            double res = -0.0;
            for (int i = 0; i < n; i++) res += a[off + i];
            return res;
        }
        if (n <= 128) {
            double[] r = new double[8];
            System.arraycopy(a, off, r, 0, 8);
            int i;
            for (i = 8; i < n - (n % 8); i += 8)
                for (int j = 0; j < 8; j++) r[j] += a[off + i + j];
            double res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
            for (; i < n; i++) res += a[off + i];
            return res;
        }
        int n2 = n / 2;
        n2 -= n2 % 8;
        return pairwise(a, off, n2) + pairwise(a, off + n2, n - n2);
    }

    /** {@code np.sum} of a float64 vector: the identity 0 plus the pairwise sum. */
    static double sum(double[] a) {
        return 0.0 + pairwise(a, 0, a.length);
    }

    /** The K x K matrix (row-major) the metric reads: {@code [[tn, fp], [fn, tp]]} at threshold j of a binary
     * confusion state, else the confusion matrix. */
    static double[] matrix(StateReader.State st, int j, int k) {
        if (st == null) return new double[k * k];
        if (j >= 0) return new double[] {st.doubles("tn")[j], st.doubles("fp")[j], st.doubles("fn")[j], st.doubles("tp")[j]};
        return st.doubles("matrix");
    }

    static double divide(double num, double den, double fill) {
        return den == 0 ? fill : num / den;
    }

    /** The value of {@code metric} from packed states ({@code packed} null: a group without rows, every state
     * zero). Null only where {@link RankingFinish} says so (a compressed score distribution). */
    public static Double value(String metric, byte[] packed) {
        String[] f = metric.split(",", -1);
        int j = Integer.parseInt(f[2]), k = Integer.parseInt(f[3]);
        StateReader.State st = packed == null ? null : StateReader.state(packed, Integer.parseInt(f[1]));
        switch (f[0]) {
            case "roc":
                return RankingFinish.rocAuc(st);
            case "ap":
                return RankingFinish.averagePrecision(st);
            case "ll":
                return RankingFinish.logLoss(st, j);
            case "brier":
                return RankingFinish.brier(st, num(f[4]));
            case "reg":
                return RegressionFinish.value(st, f[4], f[5].equals("1"), f[6].equals("1"));
            case "term":
                return TermsFinish.value(st, Integer.parseInt(f[4]), f[5].equals("1"), f[6].equals("1"));
            case "count":
                return st == null ? 0.0 : (double) st.longs("count")[0];
            case "prf":
                return prf(matrix(st, j, k), f[4], f[5], num(f[6]), num(f[7]));
            case "acc":
                return accuracy(matrix(st, j, k));
            case "bacc":
                return balancedAccuracy(matrix(st, j, k), f[4].equals("1"));
            case "rate":
                double[] m = matrix(st, j, k); // [[tn, fp], [fn, tp]]
                return divide(binary(m, f[4]), binary(m, f[5]) + binary(m, f[6]), num(f[7]));
            default:
                throw new IllegalArgumentException("unknown metric finish " + f[0]);
        }
    }

    /** A number as Python's repr writes it ({@code nan}, {@code inf} included). */
    static double num(String s) {
        switch (s) {
            case "nan":
                return Double.NaN;
            case "inf":
                return Double.POSITIVE_INFINITY;
            case "-inf":
                return Double.NEGATIVE_INFINITY;
            default:
                return Double.parseDouble(s);
        }
    }

    static double binary(double[] m, String name) {
        switch (name) {
            case "tn":
                return m[0];
            case "fp":
                return m[1];
            case "fn":
                return m[2];
            case "tp":
                return m[3];
            default:
                throw new IllegalArgumentException("unknown binary count " + name);
        }
    }

    static int side(double[] m) {
        return (int) Math.round(Math.sqrt(m.length));
    }

    static double[] diag(double[] m, int k) {
        double[] d = new double[k];
        for (int i = 0; i < k; i++) d[i] = m[i * k + i];
        return d;
    }

    /** {@code m.sum(axis=0)}: rows added in order. */
    static double[] colSums(double[] m, int k) {
        double[] out = new double[k];
        for (int j = 0; j < k; j++) {
            double s = 0.0;
            for (int i = 0; i < k; i++) s += m[i * k + j];
            out[j] = s;
        }
        return out;
    }

    /** {@code m.sum(axis=1)}: each row's numpy sum. */
    static double[] rowSums(double[] m, int k) {
        double[] out = new double[k];
        for (int i = 0; i < k; i++) out[i] = 0.0 + pairwise(m, i * k, k);
        return out;
    }

    /** core's {@code prf_values} of one entry. */
    static double prfValue(String which, double tp, double pred, double trueN, double fill, double b2) {
        switch (which) {
            case "p":
                return divide(tp, pred, fill);
            case "r":
                return divide(tp, trueN, fill);
            default:
                return divide((1 + b2) * tp, b2 * trueN + pred, fill);
        }
    }

    static double prf(double[] m, String which, String avg, double fill, double b2) {
        int k = side(m);
        double[] tp = diag(m, k), pred = colSums(m, k), trueN = rowSums(m, k);
        switch (avg) {
            case "binary":
                return prfValue(which, tp[1], pred[1], trueN[1], fill, b2);
            case "micro":
                return prfValue(which, sum(tp), sum(pred), sum(trueN), fill, b2);
            default:
                double[] v = new double[k];
                for (int c = 0; c < k; c++) v[c] = prfValue(which, tp[c], pred[c], trueN[c], fill, b2);
                return avg.equals("weighted") ? nanaverage(v, trueN) : nanaverage(v, null);
        }
    }

    /** core's {@code nanaverage} (scikit-learn's {@code _nanaverage}): np.nanmean, or np.average over the
     * non-NaN entries weighted. */
    static double nanaverage(double[] v, double[] w) {
        int n = 0;
        for (double x : v) if (!Double.isNaN(x)) n++;
        if (n == 0) return Double.NaN;
        if (w == null) {
            double[] z = new double[v.length];
            for (int i = 0; i < v.length; i++) z[i] = Double.isNaN(v[i]) ? 0.0 : v[i];
            return sum(z) / n;
        }
        double[] kv = new double[n], kw = new double[n];
        for (int i = 0, at = 0; i < v.length; i++) {
            if (Double.isNaN(v[i])) continue;
            kv[at] = v[i];
            kw[at++] = w[i];
        }
        double scl = sum(kw);
        if (scl == 0) return sum(kv) / n;
        double[] prod = new double[n];
        for (int i = 0; i < n; i++) prod[i] = kv[i] * kw[i];
        return sum(prod) / scl;
    }

    static double accuracy(double[] m) {
        int k = side(m);
        double total = sum(m);
        return total > 0 ? sum(diag(m, k)) / total : Double.NaN;
    }

    static double balancedAccuracy(double[] m, boolean adjusted) {
        int k = side(m);
        double[] trueN = rowSums(m, k);
        int n = 0;
        for (double t : trueN) if (t > 0) n++;
        if (n == 0) return Double.NaN;
        double[] per = new double[n];
        for (int c = 0, at = 0; c < k; c++)
            if (trueN[c] > 0) per[at++] = m[c * k + c] / trueN[c];
        double score = sum(per) / n;
        if (adjusted) {
            if (n == 1) return Double.NaN;
            double chance = 1.0 / n;
            score = (score - chance) / (1.0 - chance);
        }
        return score;
    }
}
