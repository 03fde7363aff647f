package mergeablemetrics;

/**
 * {@code regression_moments} (core/metrics/regression.py RegressionMomentsState), single output:
 * the row count, the weight and the exact sums of {@code w y}, {@code w p}, {@code w y y},
 * {@code w p p}, {@code w y p}, {@code w |p - y|}, {@code w |p - y| / max(|y|, eps)}, and the
 * largest {@code |p - y|} of a row of positive weight. Reads (label = target, score = prediction).
 * A multioutput layout ({@code num_outputs=D}) holds each sum and the largest error per output ((D,) fields) and
 * reads output rows ({@link #updateVector}: the D targets then the D predictions of one row, {@link Spec#OUTPUT_ROWS}).
 */
public final class RegressionMoments implements JvmState {
    private static final long serialVersionUID = 1L;
    static final String KIND = "regression_moments";
    private static final double EPS = Math.ulp(1.0); // np.finfo(np.float64).eps
    private static final String[] SUMS = {"sum_y", "sum_p", "sum_yy", "sum_pp", "sum_yp", "sum_abs_e", "sum_ape"};
    private final FloatConfig cfg;
    private long count;
    private final ExactSum weight = new ExactSum();
    private final ExactSum[] sums = FloatConfig.sums(SUMS.length);
    private double maxAbsE;
    /** num_outputs (0: a single output, scalar fields) */
    private final int d;
    /** per sum of {@link #SUMS}, its D per-output sums (a multioutput layout) */
    private final ExactSum[][] outSums;
    private final double[] outMax;

    public RegressionMoments(String config) {
        cfg = new FloatConfig(KIND, config);
        String n = cfg.get("num_outputs");
        d = n.isEmpty() ? 0 : Integer.parseInt(n);
        if (!n.isEmpty() && d < 1) throw new IllegalArgumentException(KIND + ": num_outputs " + n + " is not >= 1");
        outSums = new ExactSum[d == 0 ? 0 : SUMS.length][];
        for (int i = 0; i < outSums.length; i++) outSums[i] = FloatConfig.sums(d);
        outMax = new double[d];
    }

    /** One checked row of a multioutput layout: {@code values} holds the D targets, then the D predictions. */
    @Override
    public void updateVector(double label, double[] values, double w) {
        if (d == 0) throw new IllegalArgumentException(KIND + ": a single-output layout reads scalar rows");
        if (values.length != 2 * d) throw new IllegalArgumentException(KIND + ": a row of " + values.length + " values, not 2 x num_outputs = " + 2 * d);
        FloatConfig.checkWeight(KIND, w);
        double[] absE = new double[d], ape = new double[d];
        for (int j = 0; j < d; j++) { // every check before any sum moves: a refused row leaves no trace
            double y = values[j], p = values[d + j];
            FloatConfig.checkFinite(KIND, "target", y);
            FloatConfig.checkFinite(KIND, "prediction", p);
            absE[j] = Math.abs(p - y);
            ape[j] = absE[j] / Math.max(Math.abs(y), EPS);
            if (!Double.isFinite(absE[j]) || !Double.isFinite(ape[j]))
                throw new IllegalArgumentException(KIND + ": the error of target " + y + " and prediction " + p + " (output " + j
                    + ") overflows float64 (|prediction - target| or |prediction - target| / |target| is inf)");
        }
        if (count == Long.MAX_VALUE) throw new IllegalArgumentException(KIND + ".count: int64 overflow");
        count++;
        weight.add(w);
        for (int j = 0; j < d; j++) {
            double y = values[j], p = values[d + j];
            outSums[0][j].addProduct(y, w);
            outSums[1][j].addProduct(p, w);
            outSums[2][j].addProduct(y, w, y);
            outSums[3][j].addProduct(p, w, p);
            outSums[4][j].addProduct(y, w, p);
            outSums[5][j].addProduct(absE[j], w);
            outSums[6][j].addProduct(ape[j], w);
            if (w > 0 && absE[j] > outMax[j]) outMax[j] = absE[j];
        }
    }

    @Override
    public void update(double y, double p, double w) {
        if (d != 0) throw new IllegalArgumentException(KIND + ": a multioutput layout (num_outputs=" + d + ") reads output rows (updateVector)");
        FloatConfig.checkWeight(KIND, w);
        FloatConfig.checkFinite(KIND, "target", y);
        FloatConfig.checkFinite(KIND, "prediction", p);
        double absE = Math.abs(p - y);
        double ape = absE / Math.max(Math.abs(y), EPS);
        if (!Double.isFinite(absE) || !Double.isFinite(ape))
            throw new IllegalArgumentException(KIND + ": the error of target " + y + " and prediction " + p + " overflows float64 (|prediction - target| or |prediction - target| / |target| is inf)");
        if (count == Long.MAX_VALUE) throw new IllegalArgumentException(KIND + ".count: int64 overflow");
        count++;
        weight.add(w);
        sums[0].addProduct(y, w);
        sums[1].addProduct(p, w);
        sums[2].addProduct(y, w, y);
        sums[3].addProduct(p, w, p);
        sums[4].addProduct(y, w, p);
        sums[5].addProduct(absE, w);
        sums[6].addProduct(ape, w);
        if (w > 0 && absE > maxAbsE) maxAbsE = absE;
    }

    @Override
    public void merge(JvmState other) {
        if (!(other instanceof RegressionMoments)) throw new IllegalArgumentException("cannot merge " + other.getClass().getSimpleName() + " into " + KIND);
        RegressionMoments o = (RegressionMoments) other;
        cfg.checkSame(KIND, o.cfg);
        count = Math.addExact(count, o.count);
        weight.merge(o.weight);
        FloatConfig.mergeAll(sums, o.sums);
        maxAbsE = Math.max(maxAbsE, o.maxAbsE);
        for (int i = 0; i < outSums.length; i++) FloatConfig.mergeAll(outSums[i], o.outSums[i]);
        for (int j = 0; j < d; j++) outMax[j] = Math.max(outMax[j], o.outMax[j]);
    }

    @Override
    public byte[] toBytes() {
        ExactSum.Encoded[] e = new ExactSum.Encoded[SUMS.length + 1];
        e[0] = ExactSum.encode(new ExactSum[] {weight});
        for (int i = 0; i < SUMS.length; i++) e[i + 1] = ExactSum.encode(d == 0 ? new ExactSum[] {sums[i]} : outSums[i]);
        StateFrame f = new StateFrame(KIND, 2, cfg.layoutJson);
        long[] scalar = new long[0];
        long[] shape = d == 0 ? scalar : new long[] {d};
        f.i64("count", scalar, new long[] {count});
        f.exactValues("weight", scalar, e[0]);
        for (int i = 0; i < SUMS.length; i++) f.exactValues(SUMS[i], shape, e[i + 1]);
        f.f64("max_abs_e", shape, d == 0 ? new double[] {maxAbsE} : outMax.clone());
        f.exactLimbs("weight", e[0]);
        for (int i = 0; i < SUMS.length; i++) f.exactLimbs(SUMS[i], e[i + 1]);
        return f.finish();
    }
}
