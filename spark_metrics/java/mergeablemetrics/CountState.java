package mergeablemetrics;

/** A state that is a sum of per-row cells (core's CELL_STATES): rows of weight 1 counted per cell in int64,
 * other weights summed per cell exactly ({@link ExactSum}, as core's weighted fold does), so the state bytes
 * equal core's for any weights: the canonical exact-sum form depends on the sums' values only. */
public abstract class CountState implements JvmState {
    private static final long serialVersionUID = 1L;
    /** largest count a float64 exact-sum field holds in its compact form */
    static final long MAX_EXACT = 1L << 53;

    protected final String config;
    protected final String layoutJson;
    public final long[] counts;
    /** per cell, the exact sum of the weights other than 1 (null until such a row comes) */
    protected ExactSum[] weights;
    /** rows folded (any weight): example_count's {@code count} */
    protected long rows;

    protected CountState(String config, int numCells) {
        this.config = config;
        int nl = config.indexOf('\n');
        this.layoutJson = nl < 0 ? config : config.substring(0, nl);
        this.counts = new long[numCells];
    }

    /** The cell of one valid row. */
    public abstract int cell(double label, double score);

    /** A short name of the state kind (as core's {@code State.kind}). */
    public abstract String kind();

    @Override
    public void update(double label, double score, double weight) {
        int c = cell(label, score);
        rows++;
        if (weight == 1.0) {
            counts[c]++;
            return;
        }
        if (weights == null) weights = FloatConfig.sums(counts.length);
        weights[c].add(weight); // Spec checked it: finite, >= 0 (a zero adds nothing)
    }

    @Override
    public void merge(JvmState other) {
        if (!(other instanceof CountState) || !((CountState) other).kind().equals(kind()))
            throw new IllegalArgumentException("cannot merge state " + other.getClass().getSimpleName() + " into " + kind());
        CountState o = (CountState) other;
        if (!o.config.equals(config)) throw new IllegalArgumentException("cannot merge " + kind() + " states: different layout " + layoutJson + " != " + o.layoutJson);
        for (int i = 0; i < counts.length; i++) counts[i] = Math.addExact(counts[i], o.counts[i]);
        rows = Math.addExact(rows, o.rows);
        if (o.weights != null) {
            if (weights == null) weights = FloatConfig.sums(counts.length);
            FloatConfig.mergeAll(weights, o.weights);
        }
    }

    /** Whether a weight other than 1 was folded (the cells are then {@link #cellSums}). */
    protected boolean weighted() {
        return weights != null;
    }

    /** Per cell, the exact sum of its rows' weights (unit-weight counts plus the other weights). */
    protected ExactSum[] cellSums() {
        ExactSum[] out = FloatConfig.sums(counts.length);
        for (int i = 0; i < counts.length; i++) {
            out[i].addCount(counts[i]);
            if (weights != null) out[i].merge(weights[i]);
        }
        return out;
    }

    /** A copy of an exact sum. */
    static ExactSum copy(ExactSum s) {
        ExactSum c = new ExactSum();
        c.merge(s);
        return c;
    }

    /** Add raw cell counts (the UserDefinedAggregateFunction form keeps its buffer as cells). */
    public void addCells(long[] cells) {
        for (int i = 0; i < counts.length; i++) {
            counts[i] = Math.addExact(counts[i], cells[i]);
            rows = Math.addExact(rows, cells[i]);
        }
    }

    static double exactCount(long c, String what) {
        if (c > MAX_EXACT) throw new ArithmeticException(what + ": a count past 2**53 needs exact limbs (not ported to the JVM path)");
        return (double) c;
    }

    static double[] sumsAsDoubles(long[] v, String what) {
        double[] d = new double[v.length];
        for (int i = 0; i < v.length; i++) d[i] = exactCount(v[i], what);
        return d;
    }

    /** Whether a label is an integer in [0, k). */
    static boolean isClass(double v, int k) {
        return v >= 0 && v < k && v == Math.floor(v);
    }
}
