package mergeablemetrics;

/**
 * {@code regression_terms} (core/metrics/regression_terms.py RegressionTermsState), single output: the row
 * count, the exact weight, and per term the exact sum of {@code w * term(y, p)} over the rows inside its
 * domain with a finite term, the rows outside the domain, and the rows whose term is {@code +inf} /
 * {@code -inf} (weight > 0) or NaN (or infinite of weight 0). Each row's term is computed with the same IEEE
 * operations in the same order as core's numpy code, its logs and powers fdlibm's ({@code StrictMath.log},
 * {@code log1p} and {@code pow}; core's {@code mergeable_metrics._util.portable_log} and {@code portable_pow}),
 * so the bytes are core's.
 *
 * <p>Terms: {@code sle} (msle, rmsle), {@code pinball:A}, {@code tweedie:Q} (0: the squared error, 1: Poisson,
 * 2: Gamma, any other power: scikit-learn's general unit deviance with {@code StrictMath.pow}), {@code null:Q}
 * (the D² score's sum of the targets alone: {@code y log y}, {@code log y}, else {@code y^(2-Q)}). Config key
 * {@code terms}: the layout's sorted terms separated by {@code ;}. A multioutput layout ({@code num_outputs=D})
 * holds (D, T) sums and counts (output-major, as core's) and reads output rows ({@link #updateVector}: the D targets
 * then the D predictions of one row, {@link Spec#OUTPUT_ROWS}).
 */
public final class RegressionTerms implements JvmState {
    private static final long serialVersionUID = 1L;
    static final String KIND = "regression_terms";
    private static final int SLE = 0, PINBALL = 1, TWEEDIE0 = 2, POISSON = 3, GAMMA = 4, NULL_POISSON = 5, NULL_GAMMA = 6, TWEEDIE = 7, NULL_POW = 8;
    private final FloatConfig cfg;
    private final int[] op;
    private final double[] arg;
    private long count;
    private final ExactSum weight = new ExactSum();
    private final ExactSum[] sums;
    private final long[] outside, posinf, neginf, nan;
    /** num_outputs (0: a single output, (T,) fields) */
    private final int d;

    public RegressionTerms(String config) {
        cfg = new FloatConfig(KIND, config);
        String no = cfg.get("num_outputs");
        d = no.isEmpty() ? 0 : Integer.parseInt(no);
        if (!no.isEmpty() && d < 1) throw new IllegalArgumentException(KIND + ": num_outputs " + no + " is not >= 1");
        int cells = Math.max(d, 1);
        String t = cfg.get("terms");
        String[] terms = t.isEmpty() ? new String[0] : t.split(";");
        op = new int[terms.length];
        arg = new double[terms.length];
        for (int j = 0; j < terms.length; j++) {
            int colon = terms[j].indexOf(':');
            String name = colon < 0 ? terms[j] : terms[j].substring(0, colon);
            double a = colon < 0 ? Double.NaN : Double.parseDouble(terms[j].substring(colon + 1));
            arg[j] = a;
            if (name.equals("sle")) op[j] = SLE;
            else if (name.equals("pinball")) op[j] = PINBALL;
            else if (name.equals("tweedie") && a == 0.0) op[j] = TWEEDIE0;
            else if (name.equals("tweedie") && a == 1.0) op[j] = POISSON;
            else if (name.equals("tweedie") && a == 2.0) op[j] = GAMMA;
            else if (name.equals("null") && a == 1.0) op[j] = NULL_POISSON;
            else if (name.equals("null") && a == 2.0) op[j] = NULL_GAMMA;
            else if (name.equals("tweedie") && Double.isFinite(a)) op[j] = TWEEDIE;
            else if (name.equals("null") && Double.isFinite(a)) op[j] = NULL_POW;
            else throw new IllegalArgumentException(KIND + ": unknown term " + terms[j]);
        }
        sums = FloatConfig.sums(cells * terms.length);
        outside = new long[cells * terms.length];
        posinf = new long[cells * terms.length];
        neginf = new long[cells * terms.length];
        nan = new long[cells * terms.length];
    }

    /** scipy's {@code xlogy}: {@code x * log(y)}, 0 where {@code x == 0}. */
    private static double xlogy(double x, double y) {
        return x == 0 ? 0.0 : x * StrictMath.log(y);
    }

    /**
     * scikit-learn's unit deviance of Tweedie power {@code q} (not 0, 1, 2) of a row inside the domain, as core's
     * {@code _tweedie}: {@code 2 (max(y, 0)^(2-q) / ((1-q)(2-q)) - y p^(1-q) / (1-q) + p^(2-q) / (2-q))}, the
     * powers {@code StrictMath.pow} (fdlibm's, core's {@code portable_pow}).
     */
    private static double tweedie(double q, double y, double p) {
        double yp = q < 0 && !(y > 0) ? 0.0 : y;
        return 2 * (StrictMath.pow(yp, 2 - q) / ((1 - q) * (2 - q)) - y * StrictMath.pow(p, 1 - q) / (1 - q) + StrictMath.pow(p, 2 - q) / (2 - q));
    }

    @Override
    public void update(double y, double p, double w) {
        if (d != 0) throw new IllegalArgumentException(KIND + ": a multioutput layout (num_outputs=" + d + ") reads output rows (updateVector)");
        FloatConfig.checkWeight(KIND, w);
        FloatConfig.checkFinite(KIND, "target", y);
        FloatConfig.checkFinite(KIND, "prediction", p);
        if (count == Long.MAX_VALUE) throw new IllegalArgumentException(KIND + ".count: int64 overflow");
        count++;
        weight.add(w);
        terms(0, y, p, w);
    }

    /** One checked row of a multioutput layout: {@code values} holds the D targets, then the D predictions. */
    @Override
    public void updateVector(double label, double[] values, double w) {
        if (d == 0) throw new IllegalArgumentException(KIND + ": a single-output layout reads scalar rows");
        if (values.length != 2 * d) throw new IllegalArgumentException(KIND + ": a row of " + values.length + " values, not 2 x num_outputs = " + 2 * d);
        FloatConfig.checkWeight(KIND, w);
        for (int o = 0; o < d; o++) {
            FloatConfig.checkFinite(KIND, "target", values[o]);
            FloatConfig.checkFinite(KIND, "prediction", values[d + o]);
        }
        if (count == Long.MAX_VALUE) throw new IllegalArgumentException(KIND + ".count: int64 overflow");
        count++;
        weight.add(w);
        for (int o = 0; o < d; o++) terms(o * op.length, values[o], values[d + o], w);
    }

    /** Every term of one output's (y, p) into the cells from {@code base} (output {@code o}: {@code o * T}). */
    private void terms(int base, double y, double p, double w) {
        boolean positive = w > 0;
        for (int j = 0; j < op.length; j++) {
            double v;
            boolean inside;
            switch (op[j]) {
                case SLE: {
                    inside = y > -1 && p > -1;
                    double d = StrictMath.log1p(y) - StrictMath.log1p(p);
                    v = d * d;
                    break;
                }
                case PINBALL: {
                    double a = arg[j], d = y - p, sign = d >= 0 ? 1.0 : 0.0;
                    v = a * sign * d - (1 - a) * (1 - sign) * d;
                    inside = true;
                    break;
                }
                case TWEEDIE0: {
                    double d = y - p;
                    v = d * d;
                    inside = true;
                    break;
                }
                case POISSON:
                    inside = p > 0 && y >= 0;
                    v = 2 * (xlogy(y, y / p) - y + p);
                    break;
                case GAMMA:
                    inside = p > 0 && y > 0;
                    v = 2 * (StrictMath.log(p / y) + y / p - 1);
                    break;
                case NULL_POISSON:
                    inside = y >= 0;
                    v = xlogy(y, y);
                    break;
                case NULL_GAMMA:
                    inside = y > 0;
                    v = StrictMath.log(y);
                    break;
                case TWEEDIE: {
                    double q = arg[j];
                    inside = q < 0 ? p > 0 : p > 0 && (q < 2 ? y >= 0 : y > 0);
                    v = inside ? tweedie(q, y, p) : 0.0;
                    break;
                }
                default: { // NULL_POW: y^(2-q), max(y, 0) below power 0
                    double q = arg[j];
                    inside = q < 0 || (q < 2 ? y >= 0 : y > 0);
                    v = inside ? StrictMath.pow(q < 0 && !(y > 0) ? 0.0 : y, 2 - q) : 0.0;
                    break;
                }
            }
            int c = base + j;
            if (!inside) outside[c]++;
            else if (Double.isNaN(v)) nan[c]++;
            else if (Double.isInfinite(v)) {
                if (!positive) nan[c]++;
                else if (v > 0) posinf[c]++;
                else neginf[c]++;
            } else sums[c].addProduct(v, w);
        }
    }

    @Override
    public void merge(JvmState other) {
        if (!(other instanceof RegressionTerms)) throw new IllegalArgumentException("cannot merge " + other.getClass().getSimpleName() + " into " + KIND);
        RegressionTerms o = (RegressionTerms) other;
        cfg.checkSame(KIND, o.cfg);
        count = Math.addExact(count, o.count);
        weight.merge(o.weight);
        FloatConfig.mergeAll(sums, o.sums);
        for (int j = 0; j < outside.length; j++) {
            outside[j] = Math.addExact(outside[j], o.outside[j]);
            posinf[j] = Math.addExact(posinf[j], o.posinf[j]);
            neginf[j] = Math.addExact(neginf[j], o.neginf[j]);
            nan[j] = Math.addExact(nan[j], o.nan[j]);
        }
    }

    @Override
    public byte[] toBytes() {
        ExactSum.Encoded ew = ExactSum.encode(new ExactSum[] {weight}), es = ExactSum.encode(sums);
        long[] scalar = new long[0], shape = d == 0 ? new long[] {op.length} : new long[] {d, op.length};
        StateFrame f = new StateFrame(KIND, 2, cfg.layoutJson);
        f.i64("count", scalar, new long[] {count});
        f.exactValues("weight", scalar, ew);
        f.exactValues("sums", shape, es);
        f.i64("outside", shape, outside);
        f.i64("posinf", shape, posinf);
        f.i64("neginf", shape, neginf);
        f.i64("nan", shape, nan);
        f.exactLimbs("weight", ew);
        f.exactLimbs("sums", es);
        return f.finish();
    }
}
