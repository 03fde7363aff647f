package mergeablemetrics;

/**
 * {@code regression_moments} (core/metrics/regression.py RegressionMomentsState), single output:
 * the row count, the weight and the exact sums of {@code w y}, {@code w p}, {@code w y y},
 * {@code w p p}, {@code w y p}, {@code w |p - y|}, {@code w |p - y| / max(|y|, eps)}, and the
 * largest {@code |p - y|} of a row of positive weight. Reads (label = target, score = prediction).
 * Multioutput layouts are not ported.
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

    public RegressionMoments(String config) {
        cfg = new FloatConfig(KIND, config);
        if (!cfg.get("num_outputs").isEmpty()) throw new IllegalArgumentException(KIND + ": multioutput layouts are not ported to the JVM");
    }

    @Override
    public void update(double y, double p, double w) {
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
    }

    @Override
    public byte[] toBytes() {
        ExactSum.Encoded[] e = new ExactSum.Encoded[SUMS.length + 1];
        e[0] = ExactSum.encode(new ExactSum[] {weight});
        for (int i = 0; i < SUMS.length; i++) e[i + 1] = ExactSum.encode(new ExactSum[] {sums[i]});
        StateFrame f = new StateFrame(KIND, 2, cfg.layoutJson);
        long[] scalar = new long[0];
        f.i64("count", scalar, new long[] {count});
        f.exactValues("weight", scalar, e[0]);
        for (int i = 0; i < SUMS.length; i++) f.exactValues(SUMS[i], scalar, e[i + 1]);
        f.f64("max_abs_e", scalar, new double[] {maxAbsE});
        f.exactLimbs("weight", e[0]);
        for (int i = 0; i < SUMS.length; i++) f.exactLimbs(SUMS[i], e[i + 1]);
        return f.finish();
    }
}
